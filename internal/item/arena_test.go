package item

import (
	"strings"
	"testing"
)

// TestStrings: every string Concat made keeps its bytes while more are
// made, across chunks, with parts larger than a chunk, and from parts
// whose memory is written again after the call.
func TestStrings(t *testing.T) {
	var s Strings
	var got, want []string
	buf := make([]byte, 0, 64)
	for i := range 5000 {
		buf = append(buf[:0], strings.Repeat(string(rune('a'+i%26)), i%50)...)
		part := []byte("-" + strings.Repeat("x", i%7))
		if i%1000 == 999 {
			part = []byte(strings.Repeat("L", stringsChunk+10)) // over a chunk
		}
		got = append(got, s.Concat(buf, part, nil))
		want = append(want, string(buf)+string(part))
		for j := range buf {
			buf[j] = '?' // the caller's memory, reused
		}
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("string %d = %.40q, want %.40q", i, got[i], want[i])
		}
	}
	if testing.AllocsPerRun(100, func() { s.Concat([]byte("tx-1"), []byte("agency-0001")) }) > 0.1 {
		t.Error("Concat allocates for every string")
	}
}

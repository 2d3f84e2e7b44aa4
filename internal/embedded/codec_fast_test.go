package embedded

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reportjob/reportjob/internal/item"
)

// generalEncode is encodeAttrs's general path: names sorted, then encoded.
func generalEncode(attrs map[string]item.Value) []byte {
	buf := []byte{codecVersion}
	buf = binary.AppendUvarint(buf, uint64(len(attrs)))
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		buf = binary.AppendUvarint(buf, uint64(len(name)))
		buf = append(buf, name...)
		buf = append(buf, byte(v.Type))
		buf = binary.AppendUvarint(buf, uint64(len(v.Text)))
		buf = append(buf, v.Text...)
	}
	return buf
}

// TestEncodeContractAttrs: the unsorted encoding of contract-only maps
// gives the sorted encoding's bytes (what is stored must not depend on
// the path), maps with other names take the general path, and both decode
// back to the map.
func TestEncodeContractAttrs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 3000 {
		attrs := map[string]item.Value{}
		for _, name := range item.ContractAttrs {
			if r.IntN(3) > 0 {
				attrs[name] = item.Value{Type: item.Type(1 + r.IntN(3)), Text: string(rune('a' + r.IntN(26)))}
			}
		}
		if n%5 == 0 {
			attrs["zz_extra"] = item.S("x")
		}
		if n%7 == 0 {
			attrs["aa_extra"] = item.N("1")
		}
		got := encodeAttrs(attrs)
		if want := generalEncode(attrs); !bytes.Equal(got, want) {
			t.Fatalf("%v:\n got %x\nwant %x", attrs, got, want)
		}
		_, fast := encodeContractAttrs(attrs)
		if extra := n%5 == 0 || n%7 == 0; fast == extra {
			t.Fatalf("%v: fast path %v", attrs, fast)
		}
		back, err := decodeAttrs(got)
		if err != nil || !maps.Equal(back, attrs) {
			t.Fatalf("round trip of %v: %v %v", attrs, back, err)
		}
	}
}

package item

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestParseRecordedAt: whenever the fast path takes a text, time.Parse
// (what validation used before) takes it too, with the same time once in
// UTC and truncated to the millisecond; and it takes the canonical texts
// of times of every year 0000..9999.
func TestParseRecordedAt(t *testing.T) {
	in := []string{
		"2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00.000Z", "1900-02-29T00:00:00.000Z",
		"2000-02-29T00:00:00.000Z", "0000-02-29T00:00:00.000Z", "0000-01-01T00:00:00.000Z",
		"9999-12-31T23:59:59.999Z", "2024-04-31T00:00:00.000Z", "2024-13-01T00:00:00.000Z",
		"2024-00-01T00:00:00.000Z", "2024-01-00T00:00:00.000Z", "2024-01-01T24:00:00.000Z",
		"2024-01-01T23:60:00.000Z", "2024-01-01T23:59:60.000Z", "2024-01-01t00:00:00.000Z",
		"2024-01-01T00:00:00.000z", "2024-01-01T00:00:00.000+00:00", "2024-01-01T00:00:00Z",
		"2024-01-01T00:00:00.0000Z", "+024-01-01T00:00:00.000Z", "2024-01-01T00:00:00.-00Z",
		"2024-1-01T00:00:00.0000Z", "2024-01-01 00:00:00.000Z",
	}
	r := rand.New(rand.NewPCG(1, 2))
	const digits = "0123456789"
	for range 200000 {
		b := []byte("2024-01-01T00:00:00.000Z")
		for range 1 + r.IntN(3) {
			i := r.IntN(len(b))
			if b[i] >= '0' && b[i] <= '9' {
				b[i] = digits[r.IntN(10)]
			} else if r.IntN(8) == 0 {
				b[i] = "x:-. TZ"[r.IntN(7)]
			}
		}
		in = append(in, string(b))
	}
	for range 20000 {
		tm := time.Date(r.IntN(10000), time.Month(1+r.IntN(12)), 1+r.IntN(31), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000)*1e6, time.UTC)
		if tm.Year() <= 9999 {
			in = append(in, tm.Format(recordedAtLayout))
		}
	}
	fast := 0
	for _, s := range in {
		got, ok := parseRecordedAt(s)
		if !ok {
			continue
		}
		fast++
		want, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("%q: fast path took it, time.Parse: %v", s, err)
		}
		want = want.UTC().Truncate(time.Millisecond)
		if got != want || fmt.Sprint(got) != fmt.Sprint(want) || got.Location() != time.UTC {
			t.Fatalf("%q: fast path %v, time.Parse %v", s, got, want)
		}
	}
	if fast < 20000 {
		t.Fatalf("fast path took %d texts, want at least the 20000 canonical ones", fast)
	}
}

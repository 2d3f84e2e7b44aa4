package money

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPlainAmountMatchesGeneral: the allocation-free parser of the usual
// amount form gives exactly the general parser's result for every text it
// accepts, and leaves every other text to it.
func TestPlainAmountMatchesGeneral(t *testing.T) {
	currencies := []Currency{{}, {Code: "JPY"}, {Code: "USD", Digits: 2}, {Code: "BHD", Digits: 3}, {Code: "CLF", Digits: 4}}
	texts := []string{"0", "00", "0.0", "19.99", "19.9", "19.", ".5", "1500", "0019.990", "1.999E1", "-3", "+3",
		"99999999999999", "999999999999999", "99999999999999.9999", "1.23456", "1..2", "1.2.3", "", ".", "1a", "1 ", "٣"}
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := "0123456789.eE+-x"
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(20) {
			if r.IntN(4) == 0 {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			} else {
				b.WriteByte('0' + byte(r.IntN(10)))
			}
		}
		texts = append(texts, b.String())
	}
	taken := 0
	for _, c := range currencies {
		for _, s := range texts {
			v, ok := parsePlainAmount(s, c)
			if !ok {
				continue
			}
			taken++
			neg, digits, k, err := scanMinor(s, c)
			if err != nil || neg {
				t.Fatalf("%q %s: plain parser took what the general one refuses (%v)", s, c.Code, err)
			}
			want := int64(0)
			for _, d := range digits + strings.Repeat("0", k) {
				want = want*10 + int64(d-'0')
			}
			if v != want {
				t.Errorf("%q %s: plain %d, general %d", s, c.Code, v, want)
			}
			if got, err := ParseAmount(s, c); err != nil || got != want {
				t.Errorf("ParseAmount(%q, %s) = %d, %v; want %d", s, c.Code, got, err, want)
			}
		}
	}
	if taken < 1000 {
		t.Fatalf("only %d texts took the plain path: the test checks too little", taken)
	}
}

package item

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// referenceTextRule is textRule without its printable-ASCII fast path.
func referenceTextRule(min, max int, bad func(rune) bool) func(string) string {
	return func(s string) string {
		if !utf8.ValidString(s) {
			return "not valid UTF-8"
		}
		n := utf8.RuneCountInString(s)
		if n < min {
			if n == 0 {
				return "empty"
			}
			return fmt.Sprintf("shorter than %d characters", min)
		}
		if n > max {
			return fmt.Sprintf("longer than %d characters", max)
		}
		for _, r := range s {
			if bad(r) {
				return fmt.Sprintf("contains character %U", r)
			}
		}
		return ""
	}
}

// TestTextRuleFastPath: the printable-ASCII shortcut decides every string
// as the full check does: each byte alone, long ASCII ids, and random
// mixes of ASCII, controls, multi-byte and invalid bytes.
func TestTextRuleFastPath(t *testing.T) {
	var in []string
	for c := range 256 {
		in = append(in, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"cd")
	}
	in = append(in, "", strings.Repeat("a", 128), strings.Repeat("a", 129), strings.Repeat("é", 128), "agency-0001 ~",
		"Agence Étoile", "\u200b", "a\u00a0b", "\x7f", "tab\there")
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", " ", "~", "\x1f", "\x7f", "é", "東", "\u200b", "\xff", "\xc3"}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		in = append(in, b.String())
	}
	rules := []struct {
		min, max int
		bad      func(rune) bool
	}{{1, maxTransactionID, unicode.IsControl}, {1, maxAgencyID, notPrintable}, {0, maxOptionalID, unicode.IsControl}, {1, 3, notPrintable}}
	for _, rule := range rules {
		ref := referenceTextRule(rule.min, rule.max, rule.bad)
		for _, s := range in {
			if got, want := textRule(s, rule.min, rule.max, rule.bad), ref(s); got != want {
				t.Errorf("rule %d..%d, %q: %q, want %q", rule.min, rule.max, s, got, want)
			}
		}
	}
}

// TestPrintableASCII: the word-at-a-time check answers as a byte loop
// does, for every byte value at every position of strings of 1 to 24
// bytes (the others printable), and for random strings mixing bytes near
// the bounds.
func TestPrintableASCII(t *testing.T) {
	ref := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				return false
			}
		}
		return true
	}
	check := func(s string) {
		t.Helper()
		if got, want := printableASCII(s), ref(s); got != want {
			t.Fatalf("printableASCII(%q) = %v, want %v", s, got, want)
		}
	}
	check("")
	for n := 1; n <= 24; n++ {
		for i := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("~ a", 8)[:n])
				b[i] = byte(c)
				check(string(b))
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	near := []byte{0x00, 0x1f, 0x20, 0x21, 0x7d, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff, 'a'}
	for range 100000 {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = near[r.IntN(len(near))]
			if r.IntN(3) > 0 {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		check(string(b))
	}
}

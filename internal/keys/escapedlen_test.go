package keys

import (
	"math/rand/v2"
	"testing"
)

// TestEscapedAgencyLen: the length validation computes without building
// the escaped id is the escaped id's length, for every byte value.
func TestEscapedAgencyLen(t *testing.T) {
	ids := []string{"", "agency-0001", "Agence Étoile", "acme/travel", "100% Voyages & Co.", "東京トラベル", "\x00\xff"}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	ids = append(ids, string(all))
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		ids = append(ids, string(b))
	}
	for _, id := range ids {
		if got, want := EscapedAgencyLen(id), len(EscapeAgency(id)); got != want {
			t.Errorf("EscapedAgencyLen(%q) = %d, want %d", id, got, want)
		}
	}
}

package dedupeindex

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestFilter: a run's filter has no false negatives, few false positives
// (10 bits per id: about 1 %), and leaves out ids listed without a claim.
func TestFilter(t *testing.T) {
	s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	for _, n := range []int{0, 1, 7, 20_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var f []byte
			err := s.db.Update(func(tx *bolt.Tx) error {
				run, err := tx.CreateBucket([]byte(fmt.Sprint("run", n)))
				if err != nil {
					return err
				}
				for i := range n {
					if err := run.Put([]byte(fmt.Sprint("id-", i)), []byte{1}); err != nil {
						return err
					}
					if err := run.Put([]byte(fmt.Sprint("listed-", i)), nil); err != nil {
						return err
					}
				}
				f = buildFilter(run)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := checkFilter(f); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if !mayHold(f, idHash([]byte(fmt.Sprint("id-", i)))) {
					t.Fatalf("id-%d is in the run, the filter says not", i)
				}
			}
			fp := 0
			for i := range max(n, 1000) {
				if mayHold(f, idHash([]byte(fmt.Sprint("listed-", i)))) {
					fp++
				}
			}
			rate := float64(fp) / float64(max(n, 1000))
			t.Logf("%d ids: false positives %.4f", n, rate)
			if rate > 0.03 {
				t.Errorf("false positives %.3f, want at most 0.03", rate)
			}
			if err := checkFilter(f[:len(f)-1]); err == nil {
				t.Error("a cut filter passes the check")
			}
		})
	}
}

// TestIDHash: the filters on disk depend on idHash: FNV-1a 64, mixed.
func TestIDHash(t *testing.T) {
	for _, id := range []string{"", "a", "tx-000001", "日本語"} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(id))
		if got, want := idHash([]byte(id)), fmix64(h.Sum64()); got != want {
			t.Errorf("idHash(%q) = %x, want %x", id, got, want)
		}
	}
	// Pinned: a change would make every stored filter miss.
	if got := idHash([]byte("a")); got != 0x82a2a958a9bece5b {
		t.Errorf("idHash(a) = %#x, want 0x82a2a958a9bece5b", got)
	}
}

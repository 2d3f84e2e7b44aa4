package dedupeindex

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
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

// TestExpectedFilter: a writer told how many ids to expect builds the
// list's filter as it writes the claims, sized for what it expected; told
// too few, it reads the list again at Commit as one told nothing does.
// Either way every claim is in the filter and the ids listed without one
// are not looked for.
func TestExpectedFilter(t *testing.T) {
	ixSmallBatches(t, 7, 6)
	for _, expect := range []int64{0, 40, 90, 1000} {
		t.Run(fmt.Sprint(expect), func(t *testing.T) {
			s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
			p := pidP(0)
			w, err := s.NewClaimWriter(t.Context(), "job", hourOf(p), pidExp(p), pidStart)
			if err != nil {
				t.Fatal(err)
			}
			w.(collect.ExpectingClaimWriter).Expect(expect)
			var claimed []string
			for i := range 100 {
				id := fmt.Sprintf("id-%03d", i)
				write := i%10 != 0 // 90 claims; the others listed only
				if write {
					claimed = append(claimed, id)
				}
				if err := w.Add(id, indextest.FP(id, 0), write); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			var f []byte
			err = s.db.View(func(tx *bolt.Tx) error {
				filters, _ := jobBucket(tx, "job", bucketFilters, false)
				c := filters.Cursor()
				k, v := c.First()
				if k == nil {
					return fmt.Errorf("no filter")
				}
				f = append([]byte(nil), v...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := checkFilter(f); err != nil {
				t.Fatal(err)
			}
			sizedFor := int64(len(claimed))
			if expect >= sizedFor {
				sizedFor = expect
			}
			if want := newFilter(int(sizedFor)).bytes(); len(f) != len(want) {
				t.Errorf("filter of %d bytes, want %d (sized for %d ids)", len(f), len(want), sizedFor)
			}
			for _, id := range claimed {
				if !mayHold(f, idHash(id)) {
					t.Errorf("%s has a claim, the filter says not", id)
				}
			}
			got := ixClaimPeriods(t, s, "job", append(slices.Clone(claimed), "id-000", "id-010", "zz")...)
			if len(got) != len(claimed) {
				t.Errorf("Lookup found %d claims, want %d", len(got), len(claimed))
			}
		})
	}
}

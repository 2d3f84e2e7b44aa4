package dedupeindex

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// hourOf is the hourly period starting at start.
func hourOf(start time.Time) report.Period {
	return report.Period{Start: start, End: start.Add(time.Hour)}
}

func TestIndexConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) collect.Index {
		return openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	})
}

// The suite again with tiny transactions and pages, so that every batch
// and page edge is crossed many times.
func TestIndexConformanceSmallBatches(t *testing.T) {
	ixSmallBatches(t, 7, 3)
	indextest.Run(t, func(t *testing.T) collect.Index {
		s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
		s.db.NoSync = true // thousands of tiny transactions
		return s
	})
}

// The suite again with merges as often as they can be (two runs of a
// level merged at the next writer), blocks of 3 entries and small
// batches: the claims Lookup reads in merged runs answer as the runs did.
func TestIndexConformanceMerged(t *testing.T) {
	ixMerges(t, 2, 3)
	ixSmallBatches(t, 7, 3)
	indextest.Run(t, func(t *testing.T) collect.Index {
		s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
		s.db.NoSync = true
		return s
	})
}

// The suite again with merged runs sealed at a few entries: runs of
// merged runs stay as they are, Lookup reads them all.
func TestIndexConformanceSealed(t *testing.T) {
	ixMerges(t, 2, 3)
	ixSmallBatches(t, 7, 3)
	old := maxMergedEntries
	maxMergedEntries = 4
	t.Cleanup(func() { maxMergedEntries = old })
	indextest.Run(t, func(t *testing.T) collect.Index {
		s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
		s.db.NoSync = true
		return s
	})
}

func ixMerges(t *testing.T, fanIn, block int) {
	oldF, oldB := mergeFanIn, blockEntries
	mergeFanIn, blockEntries = fanIn, block
	t.Cleanup(func() { mergeFanIn, blockEntries = oldF, oldB })
}

func ixSmallBatches(t *testing.T, batch, page int) {
	oldBatch, oldPage := indexBatch, periodIDsPage
	indexBatch, periodIDsPage = batch, page
	t.Cleanup(func() { indexBatch, periodIDsPage = oldBatch, oldPage })
}

const sweepJob = "sweep-job"

var (
	sweepP0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	sweepP1 = sweepP0.Add(time.Hour)
	sweepE0 = sweepP0.Add(time.Hour + 35*24*time.Hour)
	sweepE1 = sweepE0.Add(time.Hour)
)

func ixCommit(t *testing.T, s *Index, job string, period, expires, now time.Time, write bool, ids ...string) {
	t.Helper()
	w, err := s.NewClaimWriter(t.Context(), job, hourOf(period), expires, now)
	if err != nil {
		t.Fatalf("NewClaimWriter: %v", err)
	}
	for _, id := range slices.Sorted(slices.Values(ids)) {
		if err := w.Add(id, indextest.FP(id, 0), write); err != nil {
			t.Fatalf("Add(%q): %v", id, err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func ixClaimPeriods(t *testing.T, s *Index, job string, ids ...string) map[string]time.Time {
	t.Helper()
	claims, err := s.Lookup(t.Context(), job, ids)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	out := map[string]time.Time{}
	for _, c := range claims {
		out[c.ID] = c.Period
	}
	return out
}

func ixList(t *testing.T, s *Index, job string, period time.Time) []string {
	t.Helper()
	var ids []string
	for id, err := range s.PeriodIDs(t.Context(), job, period) {
		if err != nil {
			t.Fatalf("PeriodIDs: %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}

// ixKeys counts the ids with a claim stored for job (claim values in its
// lists and valid entries of its merged runs) and the keys under periods/<job>.
func ixKeys(t *testing.T, s *Index, job string) (claims, heads, expiry, lists int) {
	t.Helper()
	ids := map[string]bool{}
	defer func() { claims = len(ids) }()
	err := s.db.View(func(tx *bolt.Tx) error {
		h, e, l, _ := jobPeriods(tx, job, false)
		runs, err := jobMerged(tx, job)
		if err != nil {
			return err
		}
		merged, _ := jobBucket(tx, job, bucketMerged, false)
		val := newValidity(h)
		for _, r := range runs {
			err := merged.Bucket(r.seq).ForEach(func(_, v []byte) error {
				es, err := decodeBlock(nil, v)
				if err != nil {
					return err
				}
				for i := range es {
					if ok, err := val.valid(&es[i]); err != nil || ok {
						ids[string(es[i].id)] = true
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if h != nil {
			heads, expiry = h.Stats().KeyN, e.Stats().KeyN
			_ = l.ForEachBucket(func([]byte) error { lists++; return nil })
		}
		if l != nil {
			_ = l.ForEachBucket(func(start []byte) error {
				gens := l.Bucket(start)
				return gens.ForEachBucket(func(g []byte) error {
					lc, err := newListCursor(gens.Bucket(g), unsortable(start))
					if err != nil {
						return err
					}
					for ok := lc.first(); ok; ok = lc.next() {
						if lc.hasClaim() {
							ids[string(lc.id)] = true
						}
					}
					return lc.err
				})
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

func TestIndexSweep(t *testing.T) {
	for _, tc := range []struct{ batch, fanIn int }{{10_000, 8}, {3, 8}, {3, 2}} {
		t.Run(fmt.Sprintf("batch%d-fanin%d", tc.batch, tc.fanIn), func(t *testing.T) {
			ixSmallBatches(t, tc.batch, 1000)
			ixMerges(t, tc.fanIn, 3)
			s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
			now := sweepP1.Add(2 * time.Hour)
			ids0 := []string{"a", "b", "c", "d", "e", "f", "g", "moved"}
			ixCommit(t, s, sweepJob, sweepP0, sweepE0, now, true, ids0...)
			ixCommit(t, s, sweepJob, sweepP1, sweepE1, now, true, "h", "moved")
			ixCommit(t, s, "other-job", sweepP0, sweepE0, now, true, "a")

			// Before the expiry: nothing is swept, expired or not.
			ixCommit(t, s, sweepJob, sweepP1.Add(time.Hour), sweepE1.Add(time.Hour), sweepE0.Add(-time.Second), true)
			if got := ixList(t, s, sweepJob, sweepP0); len(got) != len(ids0) {
				t.Fatalf("list of p0 swept before its expiry: %q", got)
			}
			// At p0's expiry (exactly): p0's list goes, with the claims
			// that still point to p0; "moved" is p1's and stays, and so
			// does the other job's claim of "a".
			ixCommit(t, s, sweepJob, sweepP1.Add(2*time.Hour), sweepE1.Add(2*time.Hour), sweepE0, true)
			if got := ixList(t, s, sweepJob, sweepP0); len(got) != 0 {
				t.Errorf("expired list of p0 still yields %q", got)
			}
			got := ixClaimPeriods(t, s, sweepJob, append(ids0, "h")...)
			want := map[string]time.Time{"h": sweepP1, "moved": sweepP1}
			if len(got) != len(want) || !got["h"].Equal(sweepP1) || !got["moved"].Equal(sweepP1) {
				t.Errorf("claims after the sweep = %v, want %v", got, want)
			}
			if got := ixClaimPeriods(t, s, "other-job", "a"); len(got) != 1 {
				t.Errorf("the other job's claim was swept")
			}
			if got := ixList(t, s, sweepJob, sweepP1); !slices.Equal(got, []string{"h", "moved"}) {
				t.Errorf("list of p1 = %q, want h, moved", got)
			}
			claims, heads, expiry, lists := ixKeys(t, s, sweepJob)
			// Left: p1 (2 claims) and the two empty lists written after it.
			if claims != 2 || heads != 3 || expiry != 3 || lists != 3 {
				t.Errorf("after the sweep: %d claims, %d heads, %d expiry keys, %d lists; want 2, 3, 3, 3",
					claims, heads, expiry, lists)
			}
		})
	}
}

// ixCutCtx is a context whose Err turns Canceled after n calls: a sweep cut
// short between transactions.
type ixCutCtx struct {
	context.Context
	n atomic.Int64
}

func (c *ixCutCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestIndexSweepRuns: the sweep drops each expired
// list with its runs whole, one transaction each; cut short, the next
// sweep drops the rest.
func TestIndexSweepRuns(t *testing.T) {
	ixSmallBatches(t, 2, 1000)
	s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	ixCommit(t, s, sweepJob, sweepP0, sweepE0, sweepP1, true, "a", "b", "c")
	ixCommit(t, s, sweepJob, sweepP1, sweepE1, sweepP1, true, "d", "e", "f")
	c := &ixCutCtx{Context: t.Context()}
	c.n.Store(1)
	if _, err := s.NewClaimWriter(c, sweepJob, hourOf(sweepE1), sweepE1.Add(time.Hour), sweepE1); err == nil {
		t.Fatal("NewClaimWriter with a context that ends succeeded")
	}
	if got := ixList(t, s, sweepJob, sweepP0); len(got) != 0 {
		t.Errorf("list of p0 after one sweep transaction = %q, want it gone", got)
	}
	if got := ixList(t, s, sweepJob, sweepP1); len(got) != 3 {
		t.Errorf("list of p1 after one sweep transaction = %q, want it whole", got)
	}
	if got := ixClaimPeriods(t, s, sweepJob, "a", "b", "c", "d", "e", "f"); len(got) != 3 {
		t.Errorf("claims after one sweep transaction = %v, want p1's 3", got)
	}
	ixCommit(t, s, sweepJob, sweepE1, sweepE1.Add(time.Hour), sweepE1, false)
	if claims, heads, expiry, lists := ixKeys(t, s, sweepJob); claims != 0 || heads != 1 || expiry != 1 || lists != 1 {
		t.Errorf("after the sweep: %d claims, %d heads, %d expiry keys, %d lists; want 0, 1, 1, 1", claims, heads, expiry, lists)
	}
}

// TestIndexAbandonedGeneration: a writer that never committed nor aborted
// (a crash) leaves a generation bucket that the period's next Commit
// deletes, without mixing its ids into the new list.
func TestIndexAbandonedGeneration(t *testing.T) {
	s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	ixCommit(t, s, sweepJob, sweepP0, sweepE0, sweepP1, true, "a")
	w, err := s.NewClaimWriter(t.Context(), sweepJob, hourOf(sweepP0), sweepE0, sweepP1)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x", "y"} {
		if err := w.Add(id, indextest.FP(id, 0), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.(*claimWriter).flush(); err != nil { // written, never committed
		t.Fatal(err)
	}
	ixCommit(t, s, sweepJob, sweepP0, sweepE0, sweepP1, false, "b")
	if got := ixList(t, s, sweepJob, sweepP0); !slices.Equal(got, []string{"b"}) {
		t.Errorf("PeriodIDs = %q, want [b]", got)
	}
	if _, _, _, lists := ixKeys(t, s, sweepJob); lists != 1 {
		t.Errorf("%d list buckets, want 1", lists)
	}
	gens := 0
	_ = s.db.View(func(tx *bolt.Tx) error {
		_, _, l, _ := jobPeriods(tx, sweepJob, false)
		return l.Bucket(sortable(sweepP0.UnixMilli())).ForEachBucket(func([]byte) error { gens++; return nil })
	})
	if gens != 1 {
		t.Errorf("%d generations of p0 left, want 1", gens)
	}
	// The abandoned writer's Commit now fails, and changes nothing.
	if err := w.Commit(); err == nil {
		t.Error("Commit of the abandoned writer succeeded")
	}
	if got := ixList(t, s, sweepJob, sweepP0); !slices.Equal(got, []string{"b"}) {
		t.Errorf("PeriodIDs = %q, want [b]", got)
	}
}

// TestIndexReopen: the index survives closing the file.
func TestIndexReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	ixCommit(t, New(db, path), sweepJob, sweepP0, sweepE0, sweepP1, true, "a", "b")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openIndex(t, path)
	if got := ixList(t, s, sweepJob, sweepP0); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("PeriodIDs after reopening = %q", got)
	}
	claims, err := s.Lookup(t.Context(), sweepJob, []string{"a", "b"})
	if err != nil || len(claims) != 2 {
		t.Errorf("Lookup after reopening = %v, %v", claims, err)
	}
	var _ collect.Index = s
}

// openIndex opens the bbolt file at path, closed when t ends, and returns
// the index in it.
func openIndex(t testing.TB, path string) *Index {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return New(db, path)
}

// TestIndexSweepFailedWriter: the sweep of an expired list also deletes
// the claims of the period's writers that never committed, and their
// lists.
func TestIndexSweepFailedWriter(t *testing.T) {
	ixSmallBatches(t, 3, 1000)
	s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	now := sweepP1.Add(2 * time.Hour)
	ixCommit(t, s, sweepJob, sweepP0, sweepE0, now, true, "a")
	w, err := s.NewClaimWriter(t.Context(), sweepJob, hourOf(sweepP0), sweepE0, now)
	if err != nil {
		t.Fatal(err)
	}
	failed := []string{"f1", "f2", "f3", "f4", "f5", "f6", "f7"}
	for _, id := range failed {
		if err := w.Add(id, indextest.FP(id, 0), true); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	if got := ixClaimPeriods(t, s, sweepJob, failed...); len(got) < 6 {
		t.Fatalf("the failed writer stored %d claims, want at least 6", len(got))
	}
	ixCommit(t, s, sweepJob, sweepP1, sweepE1, sweepE0, true, "h")
	if got := ixClaimPeriods(t, s, sweepJob, append([]string{"a"}, failed...)...); len(got) != 0 {
		t.Errorf("claims after the sweep = %v, want none of period %s", got, sweepP0)
	}
	if claims, heads, expiry, lists := ixKeys(t, s, sweepJob); claims != 1 || heads != 1 || expiry != 1 || lists != 1 {
		t.Errorf("after the sweep: %d claims, %d heads, %d expiry keys, %d lists; want 1 each (period %s's)", claims, heads, expiry, lists, sweepP1)
	}
}

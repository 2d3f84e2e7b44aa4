package dedupeindex

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestMergeInterrupted: a merge cut short after any of its transactions
// (the context ends between them, as a crash would stop it) leaves a
// store that answers the same, and the next writer finishes the merges
// and deletes what the cut one left (a merged bucket without meta).
func TestMergeInterrupted(t *testing.T) {
	ixSmallBatches(t, 3, 1000)
	ids := map[time.Time][]string{}
	var all []string
	for p := range 5 {
		start := sweepP0.Add(time.Duration(p) * time.Hour)
		for i := range 7 {
			id := fmt.Sprintf("id-%02d", (i*3+p)%20) // periods overlap: later ones take ids over
			ids[start] = append(ids[start], id)
		}
		all = append(all, ids[start]...)
	}
	pendingSeen := 0
	for cut := int64(1); cut <= 30; cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			ixMerges(t, 100, 2)
			s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
			for p := range 5 {
				start := sweepP0.Add(time.Duration(p) * time.Hour)
				ixCommit(t, s, sweepJob, start, sweepE0, sweepP0, true, ids[start]...)
			}
			want := ixClaimPeriods(t, s, sweepJob, all...)
			mergeFanIn = 2
			c := &ixCutCtx{Context: t.Context()}
			c.n.Store(cut)
			next := sweepP0.Add(10 * time.Hour)
			if w, err := s.NewClaimWriter(c, sweepJob, hourOf(next), sweepE1, sweepP0); err == nil {
				w.Abort()
			}
			if got := ixClaimPeriods(t, s, sweepJob, all...); !maps.EqualFunc(got, want, time.Time.Equal) {
				t.Fatalf("after a merge cut short: %v, want %v", got, want)
			}
			if merged, runs := ixMergedBuckets(t, s); merged > runs {
				pendingSeen++
			}
			ixCommit(t, s, sweepJob, next, sweepE1, sweepP0, true)
			if got := ixClaimPeriods(t, s, sweepJob, all...); !maps.EqualFunc(got, want, time.Time.Equal) {
				t.Fatalf("after the next writer: %v, want %v", got, want)
			}
			if merged, runs := ixMergedBuckets(t, s); merged != runs || merged == 0 {
				t.Errorf("%d merged buckets, %d with meta; want the same, some", merged, runs)
			}
		})
	}
	if pendingSeen == 0 {
		t.Error("no cut left a merge half written: the test does not test that")
	}
}

// ixMergedBuckets counts the merged run buckets of sweepJob and those with
// meta.
func ixMergedBuckets(t *testing.T, s *Index) (merged, runs int) {
	t.Helper()
	err := s.db.View(func(tx *bolt.Tx) error {
		b, _ := jobBucket(tx, sweepJob, bucketMerged, false)
		if b != nil {
			_ = b.ForEachBucket(func([]byte) error { merged++; return nil })
		}
		rs, err := jobMerged(tx, sweepJob)
		runs = len(rs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return merged, runs
}

// TestMergeSealed: merged runs whose merge would exceed maxMergedEntries
// stay as they are; level-0 runs are still merged; every claim is found.
func TestMergeSealed(t *testing.T) {
	ixMerges(t, 2, 2)
	old := maxMergedEntries
	maxMergedEntries = 10
	t.Cleanup(func() { maxMergedEntries = old })
	s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	want := map[string]time.Time{}
	var all []string
	for p := range 9 {
		start := sweepP0.Add(time.Duration(p) * time.Hour)
		var ids []string
		for i := range 3 {
			id := fmt.Sprintf("p%d-%d", p, i)
			ids = append(ids, id)
			want[id] = start
		}
		all = append(all, ids...)
		ixCommit(t, s, sweepJob, start, sweepE0, sweepP0, true, ids...)
	}
	levels := map[byte]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		rs, err := jobMerged(tx, sweepJob)
		for _, r := range rs {
			levels[r.meta.level]++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Pairs of periods (6 entries) make level-1 runs; two of them (12)
	// would exceed 10: no level 2.
	if levels[1] < 2 || levels[2] != 0 {
		t.Fatalf("merged runs by level %v: want level-1 runs sealed, none of level 2", levels)
	}
	got := ixClaimPeriods(t, s, sweepJob, all...)
	if !maps.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("claims %v, want %v", got, want)
	}
}

package dedupeindex

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// TestIndexReadsVersion1Claims: a claim written before claims recorded
// their period's end (value version 1) is still read, with no End, from a
// run and from a merged run, and still dedupes once the window is raised
// (its period is read as one of the current report.period's length).
func TestIndexReadsVersion1Claims(t *testing.T) {
	for _, merged := range []bool{false, true} {
		t.Run(map[bool]string{false: "run", true: "merged"}[merged], func(t *testing.T) {
			if merged {
				ixMerges(t, 2, 2)
			}
			s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
			start := time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
			expires := start.Add(time.Hour + 2*24*time.Hour) // written under a 1d window
			fp := indextest.FP("tx-1", 0)
			v := []byte{1}
			v = binary.BigEndian.AppendUint64(v, uint64(start.UnixMilli()))
			v = binary.BigEndian.AppendUint64(v, uint64(expires.Unix()))
			v = append(v, fp[:]...)
			ixCommit(t, s, "job", start, expires, start, true, "tx-1")
			// The claim value replaced by the version 1 one: in a list of
			// the per-id layout, as written before packed lists (a packed
			// list's claims are never of version 1).
			ixPerIDLayout(t, s, "job", start)
			err := s.db.Update(func(tx *bolt.Tx) error {
				_, _, lists, _ := jobPeriods(tx, "job", false)
				gens := lists.Bucket(sortable(start.UnixMilli()))
				return gens.ForEachBucket(func(k []byte) error { return gens.Bucket(k).Put([]byte("tx-1"), v) })
			})
			if err != nil {
				t.Fatal(err)
			}
			if merged {
				// Two later periods: the run is merged (fan-in 2).
				ixCommit(t, s, "job", start.Add(-2*time.Hour), expires, start, true, "other")
				ixCommit(t, s, "job", start.Add(-3*time.Hour), expires, start, true, "other2")
				_ = s.db.View(func(tx *bolt.Tx) error {
					if runs, err := jobMerged(tx, "job"); err != nil || len(runs) == 0 {
						t.Errorf("merged runs = %d, %v; want some", len(runs), err)
					}
					return nil
				})
			}
			claims, err := s.Lookup(t.Context(), "job", []string{"tx-1"})
			if err != nil || len(claims) != 1 {
				t.Fatalf("Lookup = %v, %v; want the version 1 claim", claims, err)
			}
			cl := claims[0]
			if !cl.Period.Equal(start) || !cl.End.IsZero() || cl.FP != fp || !cl.Expires.Equal(expires) {
				t.Errorf("claim = %+v, want period %s, no end, expires %s", cl, start, expires)
			}
			next := report.Period{Start: start.Add(time.Hour), End: start.Add(2 * time.Hour)}
			if !cl.Counts(next, 3*24*time.Hour) {
				t.Error("the version 1 claim does not count for the next hour with a 3d window")
			}
			// A writer of its period releases it as it does a version 2 claim.
			w, err := s.NewClaimWriter(t.Context(), "job", hourOf(start), start.Add(collect.RetentionFloor), start)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Release("tx-1"); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			if claims, err := s.Lookup(t.Context(), "job", []string{"tx-1"}); err != nil || len(claims) != 0 {
				t.Errorf("Lookup after Release = %v, %v; want nothing", claims, err)
			}
		})
	}
}

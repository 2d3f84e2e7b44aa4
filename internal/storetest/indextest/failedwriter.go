package indextest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/reportjob/reportjob/internal/collect"
)

// FailedWriterIDs is how many claims the failed writer of
// testFailedWriterReleased adds: past the embedded store's write batch
// (10,000 claims per transaction), so that some of them are stored before
// the writer fails. A store that holds more claims back before it writes
// them must lower that in the test that runs the suite.
const FailedWriterIDs = 10_050

func failedID(i int) string { return fmt.Sprintf("f-%05d", i) }

// testFailedWriterReleased: a writer that stores claims and then fails (a
// run that dies or loses its lease mid-claims: Abort, never Commit) leaves
// them listed for the next writer of the period, whose Previous yields
// them with the committed list; what that writer releases is gone, and its
// Commit forgets the failed writer's list. Before the fix, Previous did
// not exist and the next writer read only the committed list: the claim of
// an id the failed run stored and the rerun no longer bills (the item was
// deleted meanwhile) stayed, and made an identical copy in a later period a
// duplicate of a billing that never happened.
func testFailedWriterReleased(t *testing.T, ix collect.Index) {
	for _, committed := range []bool{true, false} {
		t.Run(fmt.Sprintf("committed list %v", committed), func(t *testing.T) {
			job := fmt.Sprintf("%s-%v", ixJob, committed)
			var listed []string
			if committed {
				listed = []string{"gone", "kept"}
				commitList(t, ix, job, p0, exp0, adds(true, listed...))
			}
			// The failed run: every id claimed, then Abort.
			w, err := ix.NewClaimWriter(ctx(t), job, per(p0), exp0, ixNow)
			if err != nil {
				t.Fatal(err)
			}
			all := make([]string, FailedWriterIDs)
			for i := range all {
				all[i] = failedID(i)
				if err := w.Add(all[i], FP(all[i], 0), true); err != nil {
					t.Fatalf("Add(%q): %v", all[i], err)
				}
			}
			w.Abort()
			stored := lookup(t, ix, job, all...)
			if _, ok := stored[failedID(0)]; !ok {
				t.Fatalf("the failed writer stored %d claims, none of %q: the test needs some stored", len(stored), failedID(0))
			}
			if got := periodIDs(t, ix, job, p0); !slices.Equal(got, listed) {
				t.Errorf("PeriodIDs after the failed writer = %q, want the committed %q", got, listed)
			}

			// The rerun: it bills kept and the failed run's ids but
			// f-00000 and f-00001 (their items were deleted).
			w, err = ix.NewClaimWriter(ctx(t), job, per(p0), exp0, ixNow)
			if err != nil {
				t.Fatal(err)
			}
			var prev []string
			for id, err := range w.Previous() {
				if err != nil {
					w.Abort()
					t.Fatalf("Previous after %d ids: %v", len(prev), err)
				}
				prev = append(prev, id)
			}
			if !slices.IsSorted(prev) || len(slices.Compact(slices.Clone(prev))) != len(prev) {
				t.Errorf("Previous yielded ids out of order or twice")
			}
			for _, id := range append(slices.Sorted(func(yield func(string) bool) {
				for id := range stored {
					if !yield(id) {
						return
					}
				}
			}), listed...) {
				if _, ok := slices.BinarySearch(prev, id); !ok {
					t.Errorf("Previous did not yield %q (%d ids yielded), whose claim is stored", id, len(prev))
					break
				}
			}
			billed := append([]string{}, all[2:]...)
			if committed {
				billed = append(billed, "kept")
			}
			slices.Sort(billed)
			for _, id := range billed {
				if err := w.Add(id, FP(id, 0), false); err != nil {
					t.Fatalf("Add(%q): %v", id, err)
				}
			}
			for _, id := range prev {
				if _, ok := slices.BinarySearch(billed, id); !ok {
					if err := w.Release(id); err != nil {
						t.Fatalf("Release(%q): %v", id, err)
					}
				}
			}
			if err := w.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			got := lookup(t, ix, job, append([]string{"gone", "kept"}, all[:3]...)...)
			for _, id := range []string{"gone", failedID(0), failedID(1)} {
				if c, ok := got[id]; ok {
					t.Errorf("claim of %q, which the rerun no longer bills, is still there: %+v", id, c)
				}
			}
			if committed {
				wantClaim(t, got, "kept", p0, FP("kept", 0), exp0)
			}
			if _, ok := stored[failedID(2)]; ok {
				wantClaim(t, got, failedID(2), p0, FP(failedID(2), 0), exp0)
			}

			// The failed run's list went with the rerun's Commit.
			w, err = ix.NewClaimWriter(ctx(t), job, per(p0), exp0, ixNow)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			n := 0
			for id, err := range w.Previous() {
				if err != nil {
					t.Fatalf("Previous: %v", err)
				}
				if _, ok := slices.BinarySearch(billed, id); !ok {
					t.Errorf("Previous after the rerun yielded %q, which the rerun did not bill", id)
					break
				}
				n++
			}
			if n != len(billed) {
				t.Errorf("Previous after the rerun yielded %d ids, want the %d it billed", n, len(billed))
			}
		})
	}
}

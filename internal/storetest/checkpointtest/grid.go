package checkpointtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Tests of the recorded period grid (State.Grid): written whole with a
// checkpoint move or an Update, fenced and validated like the rest.

func wantGrid(t *testing.T, cs checkpoint.Store, what string, want []checkpoint.Epoch) {
	t.Helper()
	got := load(t, cs, job).Grid
	if !slices.EqualFunc(got, want, func(a, b checkpoint.Epoch) bool { return a.From.Equal(b.From) && a.Period == b.Period }) {
		t.Fatalf("%s: grid %s, want %s", what, fmtGrid(got), fmtGrid(want))
	}
	for _, e := range got {
		if err := utcTimes(e.From); err != nil {
			t.Fatalf("%s: grid: %v", what, err)
		}
	}
}

func fmtGrid(g []checkpoint.Epoch) string {
	s := "["
	for i, e := range g {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("{%s %s}", e.From.UTC().Format(time.RFC3339), e.Period)
	}
	return s + "]"
}

func testGridWrittenWithCheckpoint(t *testing.T, cs checkpoint.Store) {
	wantGrid(t, cs, "a job never seen", nil)
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	hourly := []checkpoint.Epoch{{From: pStart(0), Period: time.Hour}}
	for i := range 2 { // the second call is a retry
		if err := cs.Commit(ctx(t), job, l, now, time.Time{}, pStart(1), checkpoint.Update{Grid: hourly}); err != nil {
			t.Fatalf("Commit with a grid (call %d): %v", i+1, err)
		}
	}
	wantGrid(t, cs, "first delivery", hourly)
	// A move that does not name a grid keeps it.
	if err := cs.Commit(ctx(t), job, l, now, pStart(1), pStart(2), none); err != nil {
		t.Fatalf("Commit p1 -> p2: %v", err)
	}
	wantGrid(t, cs, "a move without a grid", hourly)

	// A period of a new grid: the epoch goes in with the move.
	two := append(slices.Clone(hourly), checkpoint.Epoch{From: pStart(2), Period: 15 * time.Minute})
	if err := cs.Commit(ctx(t), job, l, now, pStart(2), pStart(2).Add(15*time.Minute), checkpoint.Update{Grid: two}); err != nil {
		t.Fatalf("Commit with a second epoch: %v", err)
	}
	wantGrid(t, cs, "second epoch", two)

	// A refused Commit writes none of its grid.
	three := append(slices.Clone(two), checkpoint.Epoch{From: pStart(3), Period: 2 * time.Hour})
	wantErr(t, "Commit from a stale checkpoint", cs.Commit(ctx(t), job, l, now, pStart(1), pStart(5), checkpoint.Update{Grid: three}), checkpoint.ErrConflict)
	wantGrid(t, cs, "after a conflicting Commit", two)

	// Update replaces it whole (a grid inferred once), fenced by the lease.
	inferred := []checkpoint.Epoch{{From: pStart(0).Add(-24 * time.Hour), Period: 30 * time.Minute}, {From: pStart(0), Period: time.Hour}}
	update(t, cs, l, now, checkpoint.Update{Grid: inferred})
	wantGrid(t, cs, "Update with a grid", inferred)
	wantErr(t, "Update at the lease's expiry", cs.Update(ctx(t), job, l, l.Expires, checkpoint.Update{Grid: two}), checkpoint.ErrLeaseLost)
	wantGrid(t, cs, "after a fenced Update", inferred)

	// A grid out of order, without a start or with no period is refused
	// and writes nothing.
	for _, bad := range [][]checkpoint.Epoch{
		{{From: pStart(1), Period: time.Hour}, {From: pStart(1), Period: 15 * time.Minute}},
		{{From: pStart(2), Period: time.Hour}, {From: pStart(1), Period: 15 * time.Minute}},
		{{Period: time.Hour}},
		{{From: pStart(1)}},
	} {
		if err := cs.Update(ctx(t), job, l, now, checkpoint.Update{Grid: bad}); err == nil {
			t.Fatalf("Update with grid %s: no error", fmtGrid(bad))
		}
	}
	wantGrid(t, cs, "after refused grids", inferred)
	// The rest of the state is untouched by grid writes.
	if st := load(t, cs, job); !st.Checkpoint.Equal(pStart(2).Add(15 * time.Minute)) {
		t.Fatalf("checkpoint %v after grid writes, want %v", st.Checkpoint, pStart(2).Add(15*time.Minute))
	}
}

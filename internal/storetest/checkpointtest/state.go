package checkpointtest

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Tests of the state besides checkpoint and lease: rechecks and
// restatements, written by Commit and Update.

// base is the start of period 0 of the state tests; periods are hours.
var base = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func pStart(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }

// rc is period i's recheck entry, last read at read.
func rc(i int, read time.Time) checkpoint.Recheck {
	return checkpoint.Recheck{Start: pStart(i), End: pStart(i + 1), Read: read}
}

// rs is revision rev of period i, published at at.
func rs(i, rev int, at time.Time) checkpoint.Restatement {
	return checkpoint.Restatement{Start: pStart(i), End: pStart(i + 1), Revision: rev, Reason: "recheck",
		At: at, ItemsBefore: int64(10 * i), ItemsAfter: int64(10*i + rev)}
}

func utcTimes(ts ...time.Time) error {
	for _, t := range ts {
		if !t.IsZero() && t.Location() != time.UTC {
			return fmt.Errorf("time %v is in %v, want UTC", t, t.Location())
		}
	}
	return nil
}

// diffState describes how got differs from want ("" when it does not).
// Times compare as instants and must be UTC.
func diffState(got, want checkpoint.State) string {
	switch {
	case !got.Checkpoint.Equal(want.Checkpoint):
		return fmt.Sprintf("checkpoint %v, want %v", got.Checkpoint, want.Checkpoint)
	case !sameLease(got.Lease, want.Lease):
		return fmt.Sprintf("lease %+v, want %+v", got.Lease, want.Lease)
	case got.Rechecks == nil:
		return "Rechecks is nil"
	case len(got.Rechecks) != len(want.Rechecks) && len(want.Rechecks) > 50:
		return fmt.Sprintf("%d rechecks, want %d", len(got.Rechecks), len(want.Rechecks))
	case len(got.Rechecks) != len(want.Rechecks):
		return fmt.Sprintf("rechecks %+v, want %+v", got.Rechecks, want.Rechecks)
	case len(got.Restated) != len(want.Restated):
		return fmt.Sprintf("restated %+v, want %+v", got.Restated, want.Restated)
	}
	for i, g := range got.Rechecks {
		w := want.Rechecks[i]
		if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) || !g.Read.Equal(w.Read) {
			return fmt.Sprintf("rechecks[%d] = %+v, want %+v (all: %+v)", i, g, w, got.Rechecks)
		}
		if err := utcTimes(g.Start, g.End, g.Read); err != nil {
			return fmt.Sprintf("rechecks[%d]: %v", i, err)
		}
	}
	for i, g := range got.Restated {
		w := want.Restated[i]
		if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) || !g.At.Equal(w.At) || g.Revision != w.Revision ||
			g.Reason != w.Reason || g.ItemsBefore != w.ItemsBefore || g.ItemsAfter != w.ItemsAfter {
			return fmt.Sprintf("restated[%d] = %+v, want %+v", i, g, w)
		}
		if err := utcTimes(g.Start, g.End, g.At); err != nil {
			return fmt.Sprintf("restated[%d]: %v", i, err)
		}
	}
	if err := utcTimes(got.Checkpoint, got.Lease.Expires); err != nil {
		return err.Error()
	}
	return ""
}

func wantState(t *testing.T, cs checkpoint.Store, job, what string, want checkpoint.State) {
	t.Helper()
	if d := diffState(load(t, cs, job), want); d != "" {
		t.Fatalf("%s: state: %s", what, d)
	}
}

func update(t *testing.T, cs checkpoint.Store, l checkpoint.Lease, now time.Time, u checkpoint.Update) {
	t.Helper()
	if err := cs.Update(ctx(t), job, l, now, u); err != nil {
		t.Fatalf("Update(%+v): %v", u, err)
	}
}

func testCommitAppliesUpdate(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	r0, r1 := rc(0, at(2*time.Second)), rc(1, at(3*time.Second))
	if err := cs.Commit(ctx(t), job, l, now, time.Time{}, pStart(1), checkpoint.Update{SetRecheck: &r0}); err != nil {
		t.Fatalf("Commit with SetRecheck: %v", err)
	}
	want := checkpoint.State{Checkpoint: pStart(1), Lease: l, Rechecks: []checkpoint.Recheck{r0}}
	wantState(t, cs, job, "Commit with SetRecheck", want)

	s0 := rs(0, 2, now)
	u := checkpoint.Update{SetRecheck: &r1, DropRecheck: pStart(0), Restated: &s0}
	if err := cs.Commit(ctx(t), job, l, now, pStart(1), pStart(2), u); err != nil {
		t.Fatalf("Commit with SetRecheck, DropRecheck and Restated: %v", err)
	}
	want = checkpoint.State{Checkpoint: pStart(2), Lease: l, Rechecks: []checkpoint.Recheck{r1},
		Restated: []checkpoint.Restatement{s0}}
	wantState(t, cs, job, "Commit with a full Update", want)

	// A refused Commit writes none of its Update.
	r5, s5 := rc(5, now), rs(5, 3, now)
	bad := checkpoint.Update{SetRecheck: &r5, DropRecheck: pStart(1), Restated: &s5}
	wantErr(t, "Commit from a stale checkpoint", cs.Commit(ctx(t), job, l, now, pStart(1), pStart(3), bad), checkpoint.ErrConflict)
	wantState(t, cs, job, "after a conflicting Commit", want)
	wantErr(t, "Commit at the lease's expiry", cs.Commit(ctx(t), job, l, l.Expires, pStart(2), pStart(3), bad), checkpoint.ErrLeaseLost)
	wantState(t, cs, job, "after a Commit with an expired lease", want)
}

func testCommitRetryAfterSuccess(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	r0, s0 := rc(0, now), rs(0, 2, now)
	u := checkpoint.Update{SetRecheck: &r0, Restated: &s0}
	for i := range 2 { // the second call is the retry
		if err := cs.Commit(ctx(t), job, l, now, time.Time{}, pStart(1), u); err != nil {
			t.Fatalf("Commit (call %d): %v", i+1, err)
		}
	}
	want := checkpoint.State{Checkpoint: pStart(1), Lease: l, Rechecks: []checkpoint.Recheck{r0},
		Restated: []checkpoint.Restatement{s0}}
	wantState(t, cs, job, "Commit called twice", want)

	// A retry of a move that is no longer the last one conflicts.
	if err := cs.Commit(ctx(t), job, l, now, pStart(1), pStart(2), none); err != nil {
		t.Fatalf("Commit p1 -> p2: %v", err)
	}
	wantErr(t, "late retry of zero -> p1", cs.Commit(ctx(t), job, l, now, time.Time{}, pStart(1), u), checkpoint.ErrConflict)
	want.Checkpoint = pStart(2)
	wantState(t, cs, job, "after a late retry", want)

	// A retry under a lease that was taken over is fenced.
	b2 := acquire(t, cs, job, "run-b", l.Expires)
	err := cs.Commit(ctx(t), job, l, now, pStart(1), pStart(2), none)
	wantErr(t, "retry by the old holder", err, checkpoint.ErrLeaseLost)
	want.Lease = b2
	wantState(t, cs, job, "after the old holder's retry", want)
}

func testUpdateLeaseFencing(t *testing.T, cs checkpoint.Store) {
	r0, s0 := rc(0, t0), rs(0, 2, t0)
	u := checkpoint.Update{SetRecheck: &r0, Restated: &s0}
	never := checkpoint.Lease{Owner: "run-a", Token: 1, Expires: at(ttl)}
	wantErr(t, "Update with a lease never granted", cs.Update(ctx(t), job, never, t0, u), checkpoint.ErrLeaseLost)
	wantState(t, cs, job, "after Update with a lease never granted", checkpoint.State{})

	l := acquire(t, cs, job, "run-a", t0)
	want := checkpoint.State{Lease: l}
	forgedToken, forgedOwner := l, l
	forgedToken.Token++
	forgedOwner.Owner = "run-b"
	tests := []struct {
		name string
		l    checkpoint.Lease
		now  time.Time
		u    checkpoint.Update
	}{
		{"at the lease's expiry", l, l.Expires, u},
		{"after the lease's expiry", l, l.Expires.Add(time.Hour), u},
		{"with a wrong token", forgedToken, at(time.Second), u},
		{"with a wrong owner", forgedOwner, at(time.Second), u},
		{"changing nothing, expired", l, l.Expires, checkpoint.Update{}},
		{"only dropping, wrong token", forgedToken, at(time.Second), checkpoint.Update{DropRecheck: pStart(0)}},
	}
	for _, tc := range tests {
		wantErr(t, "Update "+tc.name, cs.Update(ctx(t), job, tc.l, tc.now, tc.u), checkpoint.ErrLeaseLost)
		wantState(t, cs, job, "after Update "+tc.name, want)
	}
	if err := cs.Update(ctx(t), job, l, at(time.Second), checkpoint.Update{}); err != nil {
		t.Errorf("Update changing nothing, with the lease: %v, want nil", err)
	}
	wantState(t, cs, job, "after Update changing nothing", want)

	// Taken over: the old holder is fenced even with time left on its
	// own clock; the new holder writes.
	b2 := acquire(t, cs, job, "run-b", l.Expires)
	want.Lease = b2
	wantErr(t, "old holder's Update", cs.Update(ctx(t), job, l, at(time.Second), u), checkpoint.ErrLeaseLost)
	wantState(t, cs, job, "after the old holder's Update", want)
	update(t, cs, b2, l.Expires.Add(time.Second), u)
	want.Rechecks, want.Restated = []checkpoint.Recheck{r0}, []checkpoint.Restatement{s0}
	wantState(t, cs, job, "after the new holder's Update", want)

	// Released: fenced.
	if err := cs.Release(ctx(t), job, b2); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r1 := rc(1, t0)
	err := cs.Update(ctx(t), job, b2, l.Expires.Add(2*time.Second), checkpoint.Update{SetRecheck: &r1})
	wantErr(t, "Update after Release", err, checkpoint.ErrLeaseLost)
	if st := load(t, cs, job); len(st.Rechecks) != 1 {
		t.Errorf("Update after Release wrote: rechecks %+v", st.Rechecks)
	}
}

func testRechecksOrderAndReplace(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	for _, i := range []int{3, 0, 2, 1} {
		r := rc(i, at(time.Duration(i)*time.Second))
		update(t, cs, l, now, checkpoint.Update{SetRecheck: &r})
	}
	want := checkpoint.State{Lease: l, Rechecks: []checkpoint.Recheck{
		rc(0, at(0)), rc(1, at(time.Second)), rc(2, at(2*time.Second)), rc(3, at(3*time.Second)),
	}}
	wantState(t, cs, job, "rechecks set out of order", want)

	// Same start: replaced, not added.
	r2 := checkpoint.Recheck{Start: pStart(2), End: pStart(2).Add(30 * time.Minute), Read: at(time.Hour)}
	update(t, cs, l, now, checkpoint.Update{SetRecheck: &r2})
	want.Rechecks[2] = r2
	wantState(t, cs, job, "recheck replaced", want)

	update(t, cs, l, now, checkpoint.Update{DropRecheck: pStart(1)})
	want.Rechecks = []checkpoint.Recheck{want.Rechecks[0], r2, want.Rechecks[3]}
	wantState(t, cs, job, "recheck dropped", want)
	update(t, cs, l, now, checkpoint.Update{DropRecheck: pStart(1)})
	update(t, cs, l, now, checkpoint.Update{DropRecheck: pStart(40)})
	wantState(t, cs, job, "dropping a recheck that is not there", want)

	// Set and drop in one Update.
	r9 := rc(9, now)
	update(t, cs, l, now, checkpoint.Update{SetRecheck: &r9, DropRecheck: pStart(0)})
	want.Rechecks = []checkpoint.Recheck{r2, want.Rechecks[2], r9}
	wantState(t, cs, job, "set and drop in one Update", want)

	// Another job's state is its own.
	if st := load(t, cs, "billing-report-eu"); len(st.Rechecks) != 0 || st.Rechecks == nil {
		t.Errorf("another job's rechecks = %#v, want empty", st.Rechecks)
	}

	// Lease operations keep the state.
	r, err := cs.Renew(ctx(t), job, l, now, ttl)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	want.Lease = r
	wantState(t, cs, job, "after Renew", want)
	if err := cs.Release(ctx(t), job, r); err != nil {
		t.Fatalf("Release: %v", err)
	}
	want.Lease = acquire(t, cs, job, "run-b", at(2*time.Second))
	wantState(t, cs, job, "after Release and Acquire", want)
}

func testRestatedNewestFirst(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	n := checkpoint.MaxRestated + 5
	var last checkpoint.Restatement
	for i := range n {
		last = rs(i%7, 2+i, at(time.Duration(i)*time.Millisecond))
		update(t, cs, l, now, checkpoint.Update{Restated: &last})
	}
	want := checkpoint.State{Lease: l, Rechecks: []checkpoint.Recheck{}}
	for i := n - 1; i >= n-checkpoint.MaxRestated; i-- {
		want.Restated = append(want.Restated, rs(i%7, 2+i, at(time.Duration(i)*time.Millisecond)))
	}
	wantState(t, cs, job, fmt.Sprintf("%d restatements", n), want)

	// An Update retried after it was applied does not record it twice.
	update(t, cs, l, now, checkpoint.Update{Restated: &last})
	wantState(t, cs, job, "retried Update", want)
}

func testUpdateRejectsBadInput(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	r0 := rc(0, now)
	update(t, cs, l, now, checkpoint.Update{SetRecheck: &r0})
	want := checkpoint.State{Lease: l, Rechecks: []checkpoint.Recheck{r0}}

	noStart := checkpoint.Recheck{End: pStart(1), Read: now}
	backwards := checkpoint.Recheck{Start: pStart(2), End: pStart(1), Read: now}
	noEnd := rs(1, 2, now)
	noEnd.End = time.Time{}
	r1 := rc(1, now)
	tests := []struct {
		name string
		u    checkpoint.Update
	}{
		{"recheck without a start", checkpoint.Update{SetRecheck: &noStart}},
		{"recheck ending before its start", checkpoint.Update{SetRecheck: &backwards}},
		{"restatement without an end", checkpoint.Update{Restated: &noEnd}},
		{"set and drop of one recheck", checkpoint.Update{SetRecheck: &r1, DropRecheck: pStart(1)}},
	}
	for _, tc := range tests {
		err := cs.Update(ctx(t), job, l, now, tc.u)
		if err == nil || errors.Is(err, checkpoint.ErrLeaseLost) || errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("Update with a %s: %v, want an input error", tc.name, err)
		}
		wantState(t, cs, job, "after Update with a "+tc.name, want)
		err = cs.Commit(ctx(t), job, l, now, time.Time{}, pStart(1), tc.u)
		if err == nil || errors.Is(err, checkpoint.ErrLeaseLost) || errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("Commit with a %s: %v, want an input error", tc.name, err)
		}
		wantState(t, cs, job, "after Commit with a "+tc.name, want)
	}
}

// manyRechecks is how many rechecks testManyRechecks owes: 600 by
// default (the suite runs on every store several times, and each is one
// write), 20,000 with RJTEST_LONG=1: twice the steady state's bound
// (config's 10,000 periods of recheck span), as a backlog of rechecks that
// keep failing makes it.
func manyRechecks() int {
	if os.Getenv("RJTEST_LONG") == "1" {
		return 20000
	}
	return 600
}

// testManyRechecks: a job owes many rechecks of 15-minute periods from
// the last day of a month on, set one by one as runs do; Load returns
// every one in order; dropping every recheck of the first month, and one
// of another, leaves exactly the others; the checkpoint and lease are
// unaffected.
func testManyRechecks(t *testing.T, cs checkpoint.Store) {
	n := manyRechecks()
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	first := time.Date(2024, 3, 31, 0, 0, 0, 0, time.UTC)
	q := func(i int) checkpoint.Recheck {
		s := first.Add(time.Duration(i) * 15 * time.Minute)
		return checkpoint.Recheck{Start: s, End: s.Add(15 * time.Minute), Read: s.Add(16*time.Minute + 123*time.Millisecond)}
	}
	if err := cs.Commit(ctx(t), job, l, now, time.Time{}, q(n).Start, none); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	for i := range n {
		r := q(i)
		update(t, cs, l, now, checkpoint.Update{SetRecheck: &r})
	}
	want := make([]checkpoint.Recheck, n)
	for i := range want {
		want[i] = q(i)
	}
	wantState(t, cs, job, fmt.Sprintf("%d rechecks owed", n),
		checkpoint.State{Checkpoint: q(n).Start, Lease: l, Rechecks: want})

	// Drop every recheck of March, and one of the rest.
	april := time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
	var kept []checkpoint.Recheck
	for _, r := range want {
		if !r.Start.Before(april) {
			kept = append(kept, r)
			continue
		}
		update(t, cs, l, now, checkpoint.Update{DropRecheck: r.Start})
	}
	gone := kept[len(kept)/2]
	update(t, cs, l, now, checkpoint.Update{DropRecheck: gone.Start})
	kept = append(kept[:len(kept)/2], kept[len(kept)/2+1:]...)
	wantState(t, cs, job, "rechecks dropped", checkpoint.State{Checkpoint: q(n).Start, Lease: l, Rechecks: kept})
	// A recheck set again in the month emptied.
	r := q(3)
	update(t, cs, l, now, checkpoint.Update{SetRecheck: &r})
	wantState(t, cs, job, "a recheck set in the month emptied", checkpoint.State{Checkpoint: q(n).Start, Lease: l,
		Rechecks: append([]checkpoint.Recheck{r}, kept...)})
}

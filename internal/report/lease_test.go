package report_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// TestLeaseStallFencing drives checkpoint.Store directly: holder A stalls
// past its lease's expiry, B takes over and commits; A, whose own clock
// says its lease is still good, can neither commit nor renew.
func TestLeaseStallFencing(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	t0 := at(10, 0)

	a, err := st.Acquire(ctx, jobName, "A", t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, jobName, a, t0.Add(time.Second), time.Time{}, at(1, 0)); err != nil {
		t.Fatalf("A's first commit: %v", err)
	}
	// B cannot take an unexpired lease: it is told who holds it.
	_, err = st.Acquire(ctx, jobName, "B", t0.Add(30*time.Second), time.Minute)
	var held *checkpoint.HeldError
	if !errors.As(err, &held) || held.Owner != "A" || !held.Expires.Equal(t0.Add(time.Minute)) {
		t.Fatalf("B's Acquire before expiry = %v, want a HeldError naming A until %s", err, t0.Add(time.Minute))
	}
	// A stalls; at t0+2m its lease has expired: B takes over and commits.
	b, err := st.Acquire(ctx, jobName, "B", t0.Add(2*time.Minute), time.Minute)
	if err != nil {
		t.Fatalf("B's Acquire after expiry: %v", err)
	}
	if b.Token <= a.Token {
		t.Fatalf("B's token %d is not after A's %d", b.Token, a.Token)
	}
	if err := st.Commit(ctx, jobName, b, t0.Add(2*time.Minute), at(1, 0), at(2, 0)); err != nil {
		t.Fatalf("B's commit: %v", err)
	}
	// A wakes up. By its own clock (t0+40s) the lease is still good, and
	// it believes the checkpoint is where it left it: fenced anyway.
	for _, now := range []time.Time{t0.Add(40 * time.Second), t0.Add(3 * time.Minute)} {
		err := st.Commit(ctx, jobName, a, now, at(1, 0), at(2, 0))
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Errorf("A's Commit at %s = %v, want ErrLeaseLost", now.Format(time.TimeOnly), err)
		}
		// Even when it read the checkpoint B left.
		err = st.Commit(ctx, jobName, a, now, at(2, 0), at(3, 0))
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Errorf("A's Commit from B's checkpoint at %s = %v, want ErrLeaseLost", now.Format(time.TimeOnly), err)
		}
		if _, err := st.Renew(ctx, jobName, a, now, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Errorf("A's Renew at %s = %v, want ErrLeaseLost", now.Format(time.TimeOnly), err)
		}
	}
	// A's Release does not end B's lease.
	if err := st.Release(ctx, jobName, a); err != nil {
		t.Fatal(err)
	}
	got := load(t, st)
	if !got.Checkpoint.Equal(at(2, 0)) || got.Lease.Owner != "B" || !got.Lease.Held(t0.Add(2*time.Minute)) {
		t.Fatalf("state = %+v, want checkpoint 02:00 and B's lease held", got)
	}
	// B cannot move the checkpoint backwards, nor from a stale value.
	if err := st.Commit(ctx, jobName, b, t0.Add(2*time.Minute), at(2, 0), at(1, 0)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("backwards Commit = %v, want ErrConflict", err)
	}
	if err := st.Commit(ctx, jobName, b, t0.Add(2*time.Minute), at(1, 0), at(3, 0)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("Commit from a stale checkpoint = %v, want ErrConflict", err)
	}
	if got := load(t, st).Checkpoint; !got.Equal(at(2, 0)) {
		t.Fatalf("checkpoint = %s, want 02:00", got)
	}
}

// TestRunStalledHolderCannotCommit: run A stalls inside its first period's
// Build past its lease's expiry; run B takes over and delivers everything;
// when A wakes up and finishes building, its Commit is fenced off and the
// checkpoint stays B's.
func TestRunStalledHolderCannotCommit(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testStalledHolder(t, open(t)) })
	}
}

func testStalledHolder(t *testing.T, st testStore) {
	ctx := context.Background()
	sk := newSink(t)
	putHourly(t, st, at(0, 0), at(3, 0), 4)
	t0 := at(10, 0)
	now := at(3, 2) // 00:00, 01:00, 02:00 due

	hold := newHoldSource(st, keys.Quarter(at(0, 30)))
	a := newJob("A", hold, sk, st, newClock(t0).Now)
	type outcome struct {
		res report.Result
		err error
	}
	aDone := make(chan outcome, 1)
	go func() {
		res, err := a.Run(ctx, report.RunOptions{Now: now})
		aDone <- outcome{res, err}
	}()
	select {
	case <-hold.entered:
	case o := <-aDone:
		t.Fatalf("A finished before it was held: %+v, %v", o.res, o.err)
	case <-time.After(10 * time.Second):
		t.Fatal("A never reached the held partition")
	}

	b := newJob("B", st, sk, st, newClock(t0.Add(2*time.Minute)).Now)
	resB, err := b.Run(ctx, report.RunOptions{Now: now})
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if len(resB.Periods) != 3 || !resB.Checkpoint.Equal(at(3, 0)) {
		t.Fatalf("B built %v, checkpoint %s; want 3 periods to 03:00", manifestStarts(resB.Periods), resB.Checkpoint)
	}

	close(hold.release)
	var o outcome
	select {
	case o = <-aDone:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not return after it was released")
	}
	if !errors.Is(o.err, checkpoint.ErrLeaseLost) {
		t.Fatalf("A's Run = %v, want ErrLeaseLost", o.err)
	}
	if len(o.res.Periods) != 1 || !o.res.Checkpoint.IsZero() {
		t.Errorf("A: built %v, checkpoint %s; want the one period built, no checkpoint moved", manifestStarts(o.res.Periods), o.res.Checkpoint)
	}
	if o.res.PeriodsRemaining != 3 {
		t.Errorf("A: periods remaining %d, want 3 (the uncommitted one and the two after it)", o.res.PeriodsRemaining)
	}
	got := load(t, st)
	if !got.Checkpoint.Equal(at(3, 0)) {
		t.Fatalf("checkpoint = %s, want B's 03:00", got.Checkpoint)
	}
	// B released its lease (DynamoDB removes the owner, embedded keeps it);
	// nothing of A's is left: the token is still B's.
	if got.Lease.Token != resB.Lease.Token || got.Lease.Owner == "A" {
		t.Errorf("lease = %+v, want B's last (token %d): A's release must not touch it", got.Lease, resB.Lease.Token)
	}
}

// TestRunLeaseLostWhileBuilding: the renewal goroutine finds the lease
// taken over while a period is being built, cancels the build, and the run
// says why.
func TestRunLeaseLostWhileBuilding(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	putHourly(t, st, at(0, 0), at(2, 0), 2)
	t0 := at(10, 0)

	hold := newHoldSource(st, keys.Quarter(at(0, 15)))
	defer close(hold.release)
	clk := newClock(t0)
	a := newJob("A", hold, report.Discard{}, st, clk.Now)
	a.LeaseTTL = 150 * time.Millisecond // renewed every 50 ms
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, report.RunOptions{Now: at(2, 2)})
		aDone <- err
	}()
	<-hold.entered
	// A's clock jumps past its expiry; B takes over.
	clk.Set(t0.Add(time.Minute))
	if _, err := st.Acquire(ctx, jobName, "B", t0.Add(time.Minute), time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-aDone:
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Fatalf("A's Run = %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("A kept building after its lease was lost")
	}
	if got := load(t, st); !got.Checkpoint.IsZero() || got.Lease.Owner != "B" {
		t.Fatalf("state = %+v, want no checkpoint and B's lease", got)
	}
}

// TestRunRenewsLease: a run that takes longer than the lease TTL keeps its
// lease by renewing it, and commits.
func TestRunRenewsLease(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	putHourly(t, st, at(0, 0), at(2, 0), 2)
	j := newJob("A", slowSource{st, 60 * time.Millisecond}, report.Discard{}, st, time.Now)
	j.Builder = report.NewBuilder(report.Config{Job: jobName, Concurrency: 1}, slowSource{st, 60 * time.Millisecond},
		report.Discard{}, slog.New(slog.DiscardHandler))
	j.LeaseTTL = 150 * time.Millisecond // each period takes 4 x 60 ms > TTL
	res, err := j.Run(ctx, report.RunOptions{Now: at(2, 2)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Periods) != 2 || !res.Checkpoint.Equal(at(2, 0)) {
		t.Fatalf("built %v, checkpoint %s; want 2 periods to 02:00", manifestStarts(res.Periods), res.Checkpoint)
	}
	got := load(t, st)
	if got.Lease.Owner != "A" || got.Lease.Held(time.Now()) {
		t.Errorf("lease after the run = %+v, want A's, released", got.Lease)
	}
}

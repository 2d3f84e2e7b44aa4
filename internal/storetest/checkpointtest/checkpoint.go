package checkpointtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

const (
	job = "billing-report"
	ttl = time.Minute
)

// none is the Update that changes nothing besides the checkpoint.
var none checkpoint.Update

// t0 is the clock at the start of every checkpoint test.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func acquire(t *testing.T, cs checkpoint.Store, job, owner string, now time.Time) checkpoint.Lease {
	t.Helper()
	l, err := cs.Acquire(ctx(t), job, owner, now, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s, %s): %v", job, owner, now.Format(time.RFC3339Nano), err)
	}
	if l.Owner != owner || !l.Expires.Equal(now.Add(ttl)) || l.Token <= 0 {
		t.Fatalf("Acquire(%s, %s) = %+v, want owner %s, token > 0, expires %s", job, owner, l, owner, now.Add(ttl))
	}
	return l
}

func load(t *testing.T, cs checkpoint.Store, job string) checkpoint.State {
	t.Helper()
	st, err := cs.Load(ctx(t), job)
	if err != nil {
		t.Fatalf("Load(%s): %v", job, err)
	}
	return st
}

func sameLease(got, want checkpoint.Lease) bool {
	return got.Owner == want.Owner && got.Token == want.Token && got.Expires.Equal(want.Expires)
}

func wantCheckpoint(t *testing.T, cs checkpoint.Store, job string, want time.Time) {
	t.Helper()
	got := load(t, cs, job).Checkpoint
	if !got.Equal(want) {
		t.Fatalf("checkpoint of %s = %v, want %v", job, got, want)
	}
	if !got.IsZero() && got.Location() != time.UTC {
		t.Errorf("checkpoint of %s is in %v, want UTC", job, got.Location())
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", what, err, target)
	}
}

func testLoadUnknown(t *testing.T, cs checkpoint.Store) {
	st := load(t, cs, "never-seen")
	if !st.Checkpoint.IsZero() || st.Lease != (checkpoint.Lease{}) || len(st.Rechecks) != 0 || len(st.Restated) != 0 {
		t.Errorf("Load of unknown job = %+v, want zero State", st)
	}
	if st.Rechecks == nil {
		t.Error("Load of unknown job: Rechecks is nil, want non-nil and empty")
	}
}

func testAcquireRenewRelease(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	if st := load(t, cs, job); !sameLease(st.Lease, l) || !st.Lease.Held(at(time.Second)) {
		t.Fatalf("Load after Acquire: lease %+v, want %+v held", st.Lease, l)
	}

	r, err := cs.Renew(ctx(t), job, l, at(30*time.Second), ttl)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if r.Owner != l.Owner || r.Token != l.Token || !r.Expires.Equal(at(90*time.Second)) {
		t.Fatalf("Renew = %+v, want owner %s token %d expires %v", r, l.Owner, l.Token, at(90*time.Second))
	}
	if st := load(t, cs, job); !sameLease(st.Lease, r) {
		t.Fatalf("Load after Renew: lease %+v, want %+v", st.Lease, r)
	}
	// The lease is still held one millisecond before its renewed expiry.
	if _, err := cs.Acquire(ctx(t), job, "run-b", at(90*time.Second-time.Millisecond), ttl); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Fatalf("Acquire by another owner just before expiry: %v, want ErrLeaseHeld", err)
	}

	// Re-acquiring one's own lease while it is held re-takes it with a
	// bigger token; the older grant is no longer current.
	again := acquire(t, cs, job, "run-a", at(90*time.Second-time.Millisecond))
	if again.Token <= r.Token {
		t.Errorf("re-Acquire by the holder: token %d, want > %d", again.Token, r.Token)
	}
	_, err = cs.Renew(ctx(t), job, r, at(91*time.Second), ttl)
	wantErr(t, "Renew of the superseded grant", err, checkpoint.ErrLeaseLost)

	if err := cs.Release(ctx(t), job, again); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if st := load(t, cs, job); st.Lease.Held(at(100 * time.Second)) {
		t.Fatalf("after Release the lease is still held: %+v", st.Lease)
	}
	_, err = cs.Renew(ctx(t), job, again, at(101*time.Second), ttl)
	wantErr(t, "Renew after Release", err, checkpoint.ErrLeaseLost)
	if err := cs.Release(ctx(t), job, again); err != nil {
		t.Errorf("second Release of a lost lease: %v, want nil", err)
	}

	// Released: another owner gets it at once, with a bigger token.
	b2 := acquire(t, cs, job, "run-b", at(102*time.Second))
	if b2.Token <= again.Token {
		t.Errorf("Acquire after Release: token %d, want > %d", b2.Token, again.Token)
	}
	// Renew of an expired (not taken over) lease fails.
	_, err = cs.Renew(ctx(t), job, b2, b2.Expires, ttl)
	wantErr(t, "Renew at expiry", err, checkpoint.ErrLeaseLost)
}

func testLeaseHeld(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	_, err := cs.Acquire(ctx(t), job, "run-b", at(10*time.Second), ttl)
	var held *checkpoint.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire while held: err = %v, want *checkpoint.HeldError", err)
	}
	if !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Errorf("Acquire while held: errors.Is(%v, ErrLeaseHeld) = false", err)
	}
	if held.Owner != "run-a" || !held.Expires.Equal(l.Expires) {
		t.Errorf("HeldError = {%s %v}, want {run-a %v}", held.Owner, held.Expires, l.Expires)
	}
	if st := load(t, cs, job); !sameLease(st.Lease, l) {
		t.Errorf("refused Acquire changed the lease: %+v, want %+v", st.Lease, l)
	}
}

func testLeaseTakeover(t *testing.T, cs checkpoint.Store) {
	a := acquire(t, cs, job, "run-a", t0)
	// Expired exactly at Expires: another owner takes over.
	bl := acquire(t, cs, job, "run-b", a.Expires)
	if bl.Token <= a.Token {
		t.Fatalf("takeover token %d, want > %d", bl.Token, a.Token)
	}
	now := a.Expires.Add(time.Second)
	_, err := cs.Renew(ctx(t), job, a, now, ttl)
	wantErr(t, "old holder's Renew", err, checkpoint.ErrLeaseLost)
	err = cs.Commit(ctx(t), job, a, now, time.Time{}, at(time.Hour), none)
	wantErr(t, "old holder's Commit", err, checkpoint.ErrLeaseLost)
	// A stale holder that still has time on its own clock is fenced too.
	err = cs.Commit(ctx(t), job, a, t0.Add(time.Second), time.Time{}, at(time.Hour), none)
	wantErr(t, "old holder's Commit with its own clock", err, checkpoint.ErrLeaseLost)
	wantCheckpoint(t, cs, job, time.Time{})

	// The old holder's Release does not free the new holder's lease.
	if err := cs.Release(ctx(t), job, a); err != nil {
		t.Errorf("Release of a lost lease: %v, want nil", err)
	}
	if st := load(t, cs, job); !sameLease(st.Lease, bl) {
		t.Errorf("old holder's Release changed the lease: %+v, want %+v", st.Lease, bl)
	}
	if err := cs.Commit(ctx(t), job, bl, now, time.Time{}, at(time.Hour), none); err != nil {
		t.Fatalf("new holder's Commit: %v", err)
	}
	wantCheckpoint(t, cs, job, at(time.Hour))
}

func testCommitCAS(t *testing.T, cs checkpoint.Store) {
	l := acquire(t, cs, job, "run-a", t0)
	now := at(time.Second)
	p1 := time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)
	p2, p3 := p1.Add(time.Hour), p1.Add(2*time.Hour)
	commit := func(from, to time.Time) error { return cs.Commit(ctx(t), job, l, now, from, to, none) }

	wantErr(t, "first Commit from a non-zero checkpoint", commit(p1, p2), checkpoint.ErrConflict)
	wantCheckpoint(t, cs, job, time.Time{})
	if err := commit(time.Time{}, p1); err != nil {
		t.Fatalf("first Commit (zero -> p1): %v", err)
	}
	wantCheckpoint(t, cs, job, p1)

	tests := []struct {
		name     string
		from, to time.Time
	}{
		{"from zero when one is stored", time.Time{}, p2},
		{"from a stale checkpoint", p1.Add(-time.Hour), p2},
		{"from a later checkpoint", p2, p3},
		{"to equal to from", p1, p1},
		{"backwards", p1, p1.Add(-time.Hour)},
		{"backwards to zero", p1, time.Time{}},
	}
	for _, tc := range tests {
		wantErr(t, tc.name, commit(tc.from, tc.to), checkpoint.ErrConflict)
		wantCheckpoint(t, cs, job, p1)
	}
	if err := commit(p1, p2); err != nil {
		t.Fatalf("Commit p1 -> p2: %v", err)
	}
	// A retried Commit of the same move (its response was lost) finds its
	// own work done: nil, and nothing changes.
	if err := commit(p1, p2); err != nil {
		t.Fatalf("replayed Commit p1 -> p2: %v, want nil", err)
	}
	wantCheckpoint(t, cs, job, p2)
	if err := commit(p2, p3); err != nil {
		t.Fatalf("Commit p2 -> p3: %v", err)
	}
	wantCheckpoint(t, cs, job, p3)
	// Committing keeps the lease.
	if st := load(t, cs, job); !sameLease(st.Lease, l) {
		t.Errorf("Commit changed the lease: %+v, want %+v", st.Lease, l)
	}
}

func testCommitLeaseLost(t *testing.T, cs checkpoint.Store) {
	p1 := time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)
	err := cs.Commit(ctx(t), job, checkpoint.Lease{Owner: "run-a", Token: 1, Expires: at(ttl)}, t0, time.Time{}, p1, none)
	wantErr(t, "Commit with a lease never granted", err, checkpoint.ErrLeaseLost)

	l := acquire(t, cs, job, "run-a", t0)
	err = cs.Commit(ctx(t), job, l, l.Expires, time.Time{}, p1, none)
	wantErr(t, "Commit at the lease's expiry", err, checkpoint.ErrLeaseLost)
	err = cs.Commit(ctx(t), job, l, l.Expires.Add(time.Hour), time.Time{}, p1, none)
	wantErr(t, "Commit after the lease's expiry", err, checkpoint.ErrLeaseLost)
	wantCheckpoint(t, cs, job, time.Time{})

	forged := l
	forged.Token++
	err = cs.Commit(ctx(t), job, forged, at(time.Second), time.Time{}, p1, none)
	wantErr(t, "Commit with a wrong token", err, checkpoint.ErrLeaseLost)
	forged = l
	forged.Owner = "run-b"
	err = cs.Commit(ctx(t), job, forged, at(time.Second), time.Time{}, p1, none)
	wantErr(t, "Commit with a wrong owner", err, checkpoint.ErrLeaseLost)
	wantCheckpoint(t, cs, job, time.Time{})

	if err := cs.Release(ctx(t), job, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	err = cs.Commit(ctx(t), job, l, at(time.Second), time.Time{}, p1, none)
	wantErr(t, "Commit after Release", err, checkpoint.ErrLeaseLost)
	wantCheckpoint(t, cs, job, time.Time{})
}

func testJobsIndependent(t *testing.T, cs checkpoint.Store) {
	const other = "billing-report-eu"
	a := acquire(t, cs, job, "run-a", t0)
	o := acquire(t, cs, other, "run-b", t0) // not held: another job
	p1 := time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)

	err := cs.Commit(ctx(t), other, a, at(time.Second), time.Time{}, p1, none)
	wantErr(t, "Commit with another job's lease", err, checkpoint.ErrLeaseLost)
	if err := cs.Commit(ctx(t), job, a, at(time.Second), time.Time{}, p1, none); err != nil {
		t.Fatalf("Commit %s: %v", job, err)
	}
	wantCheckpoint(t, cs, other, time.Time{})
	if err := cs.Commit(ctx(t), other, o, at(time.Second), time.Time{}, p1.Add(time.Hour), none); err != nil {
		t.Fatalf("Commit %s: %v", other, err)
	}
	wantCheckpoint(t, cs, job, p1)
	wantCheckpoint(t, cs, other, p1.Add(time.Hour))

	if err := cs.Release(ctx(t), job, a); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if st := load(t, cs, other); !sameLease(st.Lease, o) {
		t.Errorf("releasing %s changed %s's lease: %+v, want %+v", job, other, st.Lease, o)
	}
}

func testConcurrentAcquire(t *testing.T, cs checkpoint.Store) {
	const n = 8
	var (
		wg     sync.WaitGroup
		leases [n]checkpoint.Lease
		errs   [n]error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			leases[i], errs[i] = cs.Acquire(ctx(t), job, fmt.Sprintf("run-%d", i), t0, ttl)
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("both run-%d and run-%d acquired the lease", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, checkpoint.ErrLeaseHeld):
			t.Errorf("run-%d: Acquire: %v, want nil or ErrLeaseHeld", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no Acquire won: %v", errs)
	}
	if st := load(t, cs, job); !sameLease(st.Lease, leases[winner]) {
		t.Errorf("stored lease %+v, want the winner's %+v", st.Lease, leases[winner])
	}
}

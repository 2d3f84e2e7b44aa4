package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// DefaultLeaseTTL is how long a lease lasts unless renewed; it is renewed
// every third of it while the run works.
const DefaultLeaseTTL = 2 * time.Minute

// holder keeps a run's lease: it renews it in the background and fences
// every write. Its local deadline (from just before the request that
// granted or renewed the lease, plus the TTL less a tenth of it for clock
// skew between hosts) passes before the store's expiry could: a holder
// that stalls (a paused process, a long GC, a suspended VM) finds its
// deadline passed when it resumes, and writes nothing more, before the
// renewal that would tell it so comes back.
//
// The deadline is kept twice and both must be ahead: on the monotonic
// clock, which a change of the wall clock cannot move, and on the wall
// clock, which keeps counting while the machine or VM is suspended (Go's
// monotonic clock is CLOCK_MONOTONIC on Linux, which does not). A wall
// clock set forward can only make the run stop early, the safe side.
type holder struct {
	j      *Job
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	lease    checkpoint.Lease
	deadline deadline
	lost     error
}

// deadline is a lease's local deadline on both clocks.
type deadline struct {
	mono, wall time.Time
}

// deadlineAt returns the deadline ttl after sent (a time.Now reading, or a test
// clock's time without a monotonic reading: then both are the same).
func deadlineAt(sent time.Time, ttl time.Duration) deadline {
	return deadline{mono: sent.Add(ttl), wall: sent.Round(0).Add(ttl)}
}

// passed tells whether now is at or past the deadline on either clock.
func (d deadline) passed(now time.Time) bool {
	return !now.Before(d.mono) || !now.Round(0).Before(d.wall)
}

// ErrFenced wraps checkpoint.ErrLeaseLost when the local deadline of the
// lease passed.
var ErrFenced = fmt.Errorf("lease may have expired: this run writes nothing more: %w", checkpoint.ErrLeaseLost)

// LostError is the error of a run that stopped because it lost its lease
// (a renewal refused, or its local deadline passed while it was stalled:
// a paused process, a suspended VM), whatever the write it was doing said
// ("context deadline exceeded", "write refused"). Holder is the job's
// lease as the store has it now: another run's, when one took it over.
// It wraps checkpoint.ErrLeaseLost and the error the run stopped with.
type LostError struct {
	// Ours is the run's own lease, Holder the store's lease after it.
	Ours, Holder checkpoint.Lease
	// ReadErr is why the store's lease could not be read (Holder is zero).
	ReadErr error
	Err     error
}

func (e *LostError) Error() string {
	var who string
	switch {
	case e.ReadErr != nil:
		who = fmt.Sprintf("its lease (token %d; the lease's holder could not be read: %v)", e.Ours.Token, e.ReadErr)
	case e.Holder.Token == e.Ours.Token:
		who = fmt.Sprintf("its lease (token %d expired while the run was stalled; no other run has taken it)", e.Ours.Token)
	case e.Holder.Expires.IsZero():
		who = fmt.Sprintf("its lease to %s (token %d, released since)", e.Holder.Owner, e.Holder.Token)
	default:
		who = fmt.Sprintf("its lease to %s (token %d, until %s)", e.Holder.Owner, e.Holder.Token, e.Holder.Expires.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("this run (%s) lost %s and wrote nothing more: %v", e.Ours.Owner, who, e.Err)
}

func (e *LostError) Unwrap() []error { return []error{checkpoint.ErrLeaseLost, e.Err} }

// lostLease returns err as a *LostError when the run's lease is lost or in
// question (err says so, or the lease's local deadline has passed), naming
// the lease's holder read from the store; else err as it is.
func (r *runner) lostLease(ctx context.Context, err error) error {
	var lost *LostError
	if err == nil || r.lease == nil || errors.As(err, &lost) ||
		!errors.Is(err, checkpoint.ErrLeaseLost) && r.lease.Check() == nil {
		return err
	}
	e := &LostError{Ours: r.lease.Lease(), Err: err}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if st, rerr := r.j.State.Load(rctx, r.j.Name); rerr != nil {
		e.ReadErr = rerr
	} else {
		e.Holder = st.Lease
	}
	return e
}

// Check implements publish.Fence: nil while the lease is certainly held.
func (h *holder) Check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	if h.deadline.passed(h.j.now()) {
		return ErrFenced
	}
	return nil
}

// Lease returns the lease as last granted or renewed.
func (h *holder) Lease() checkpoint.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

func (h *holder) margin() time.Duration { return h.j.ttl() / 10 }

// acquire takes the lease and starts renewing it until ctx ends.
func (j *Job) acquire(ctx context.Context, cancel context.CancelCauseFunc) (*holder, error) {
	sent := j.now()
	l, err := j.State.Acquire(ctx, j.Name, j.Owner, j.now(), j.ttl())
	if err != nil {
		return nil, fmt.Errorf("acquire lease: %w", err)
	}
	h := &holder{j: j, cancel: cancel, lease: l}
	h.deadline = deadlineAt(sent, j.ttl()-h.margin())
	return h, nil
}

// keep renews the lease every TTL/3 until ctx ends. When the lease is
// lost it cancels the run with the reason.
func (h *holder) keep(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(h.j.ttl() / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sent := h.j.now()
			nl, err := h.j.State.Renew(ctx, h.j.Name, h.Lease(), h.j.now(), h.j.ttl())
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				if errors.Is(err, checkpoint.ErrLeaseLost) {
					h.mu.Lock()
					h.lost = fmt.Errorf("renew lease: %w", err)
					h.mu.Unlock()
					h.j.Log.Error("lease lost: stopping the run", "owner", h.lease.Owner, "token", h.lease.Token)
					h.cancel(h.lost)
					return
				}
				h.j.Log.Warn("renew lease failed; will retry", "err", err)
				continue
			}
			h.mu.Lock()
			h.lease = nl
			h.deadline = deadlineAt(sent, h.j.ttl()-h.margin())
			h.mu.Unlock()
		}
	}()
	return done
}

// release gives the lease back, with a fresh context (the run's may be
// cancelled).
func (h *holder) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.j.State.Release(rctx, h.j.Name, h.Lease()); err != nil {
		h.j.Log.Warn("release lease", "err", err)
	}
}

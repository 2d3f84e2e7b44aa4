// Package checkpoint keeps how far a job has delivered reports (the
// checkpoint) and who may move it (the lease).
//
// The checkpoint is the end of the last period whose reports were fully
// delivered. It only moves forward, with a compare-and-set write, and only
// by the current holder of the job's lease: a holder that stalled past its
// lease's expiry, or whose lease was taken over, is fenced off.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLeaseHeld means another owner holds an unexpired lease. Errors
	// that match it are *HeldError.
	ErrLeaseHeld = errors.New("lease held by another run")
	// ErrLeaseLost means the caller's lease is no longer the current one
	// (expired, taken over, or released): it must not write.
	ErrLeaseLost = errors.New("lease lost")
	// ErrConflict means the stored checkpoint is not the one the caller
	// expected (another run moved it), or the move would not go forward.
	ErrConflict = errors.New("checkpoint conflict")
)

// State is a job's stored state.
type State struct {
	// Checkpoint is the end of the last delivered period; zero when the
	// job has none yet.
	Checkpoint time.Time
	// Lease is the last lease granted; zero when none ever was. It may be
	// expired.
	Lease Lease
}

// Lease is a grant to one owner to run the job until Expires.
type Lease struct {
	Owner string
	// Token grows by one with every Acquire that changes hands or
	// re-takes a lease: the fencing token. Commit and Renew check it.
	Token   int64
	Expires time.Time
}

// Held reports whether the lease is unexpired at now.
func (l Lease) Held(now time.Time) bool { return l.Owner != "" && now.Before(l.Expires) }

// HeldError says who holds the lease, until when.
type HeldError struct {
	Owner   string
	Expires time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease held by %s until %s", e.Owner, e.Expires.UTC().Format(time.RFC3339))
}

func (e *HeldError) Is(target error) bool { return target == ErrLeaseHeld }

// Store holds each job's checkpoint and lease durably. All times are
// passed in by the caller (its clock), so that tests control them; stores
// compare them as given. Reads are strongly consistent.
type Store interface {
	// Load returns the job's state; a job never seen returns a zero State
	// and nil.
	Load(ctx context.Context, job string) (State, error)
	// Acquire grants owner the lease until now+ttl when it is free, expired
	// at now, or already owner's, with Token one more than the stored one.
	// Otherwise it returns a *HeldError.
	Acquire(ctx context.Context, job, owner string, now time.Time, ttl time.Duration) (Lease, error)
	// Renew extends l to now+ttl when l is still the current lease
	// (same owner and token) and unexpired at now; else ErrLeaseLost.
	Renew(ctx context.Context, job string, l Lease, now time.Time, ttl time.Duration) (Lease, error)
	// Release ends l early when it is still the current lease; releasing a
	// lease already lost is not an error.
	Release(ctx context.Context, job string, l Lease) error
	// Commit moves the checkpoint from `from` (zero: none yet) to `to`
	// when the stored checkpoint equals from and to is after it
	// (ErrConflict otherwise), and l is the current lease, unexpired at
	// now (ErrLeaseLost otherwise). Both checks and the write are one
	// atomic conditional write.
	Commit(ctx context.Context, job string, l Lease, now time.Time, from, to time.Time) error
}

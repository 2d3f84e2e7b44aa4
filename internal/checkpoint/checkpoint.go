// Package checkpoint keeps a job's durable state: how far it has delivered
// reports (the checkpoint), who may work on it (the lease), which delivered
// periods are still owed a recheck, and which periods were restated lately.
//
// The checkpoint is the end of the last period whose reports were fully
// delivered. It only moves forward, with a compare-and-set write, and only
// by the current holder of the job's lease: a holder that stalled past its
// lease's expiry, or whose lease was taken over, is fenced off. Every other
// state write is fenced by the lease the same way.
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

// MaxRestated is how many restatements State.Restated keeps, newest first.
const MaxRestated = 20

// State is a job's stored state.
type State struct {
	// Checkpoint is the end of the last delivered period; zero when the
	// job has none yet.
	Checkpoint time.Time
	// Lease is the last lease granted; zero when none ever was. It may be
	// expired or released (Expires zero).
	Lease Lease
	// Rechecks are the delivered periods still owed a recheck, in
	// ascending Start order. Never nil after Load.
	Rechecks []Recheck
	// Restated are the most recent restatements, newest first, at most
	// MaxRestated.
	Restated []Restatement
	// Grid is the period grid the delivered periods have, in ascending
	// From order; Grid[0].From is the start of the first delivered
	// period. Empty when no period was delivered yet, or in a state
	// written before grids were recorded (package job infers it once from
	// the sink). Package report (report.Grid) is the one place that turns
	// it into periods.
	Grid []Epoch
}

// Epoch is a stretch of the period grid: from From on (until the next
// epoch's From), periods are Period long, aligned to UTC midnight. From is
// a boundary of the epoch's period and of the epoch before it (the grid
// switches at a boundary both share), except in grids inferred from
// states of earlier versions, where a period may have been shortened at a
// switch.
type Epoch struct {
	From   time.Time
	Period time.Duration
}

// Recheck is a delivered period that is still owed a recheck: a re-read of
// its items at some delay after its end (report.recheck_after).
type Recheck struct {
	Start, End time.Time
	// Read is when (report clock) the period's items were last read and
	// found to match, or published: a recheck at delay d is due when
	// now >= End+d and Read < End+d.
	Read time.Time
}

// Restatement records one published revision that replaced an earlier one.
type Restatement struct {
	Start, End time.Time
	Revision   int
	// Reason is "recheck", "verify --repair" or "backfill".
	Reason string
	// At is when (report clock) it was published.
	At time.Time
	// ItemsBefore and ItemsAfter are the items_read of the replaced and the
	// new manifest.
	ItemsBefore, ItemsAfter int64
}

// Update is a change to a job's state besides its checkpoint. The zero
// value changes nothing.
type Update struct {
	// SetRecheck adds or replaces the entry of the period starting at
	// SetRecheck.Start.
	SetRecheck *Recheck
	// DropRecheck removes the entry of the period starting at DropRecheck
	// (no-op when there is none); zero for none.
	DropRecheck time.Time
	// Restated is prepended to State.Restated (keeping MaxRestated).
	Restated *Restatement
	// Grid, when not nil, replaces State.Grid whole (an epoch is
	// appended when a period of a new grid is delivered, with the
	// checkpoint move; an inferred grid is written once).
	Grid []Epoch
}

// IsZero reports whether u changes nothing.
func (u Update) IsZero() bool {
	return u.SetRecheck == nil && u.DropRecheck.IsZero() && u.Restated == nil && u.Grid == nil
}

// Lease is a grant to one owner to run the job until Expires.
type Lease struct {
	Owner string
	// Token grows by one with every Acquire that changes hands or
	// re-takes a lease: the fencing token. Commit, Update and Renew check
	// it.
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

// Store holds each job's state durably. All times are passed in by the
// caller (its clock), so that tests control them; stores compare them as
// given, at millisecond precision. Reads are strongly consistent. Every
// write is atomic: all of it happens or none.
//
// A write whose response was lost may be retried (by the caller or its
// SDK): a store recognises its own earlier success rather than failing the
// retry on its own condition (a Commit retried after it moved the
// checkpoint returns nil).
type Store interface {
	// Load returns the job's state; a job never seen returns a zero State
	// (with a non-nil, empty Rechecks) and nil.
	Load(ctx context.Context, job string) (State, error)
	// Acquire grants owner the lease until now+ttl when it is free,
	// expired at now, or already owner's, with Token one more than the
	// stored one. Otherwise it returns a *HeldError. A store whose own
	// locking proves the recorded holder is gone (the embedded file lock)
	// grants it at once.
	Acquire(ctx context.Context, job, owner string, now time.Time, ttl time.Duration) (Lease, error)
	// Renew extends l to now+ttl when l is still the current lease
	// (same owner and token) and unexpired at now; else ErrLeaseLost.
	Renew(ctx context.Context, job string, l Lease, now time.Time, ttl time.Duration) (Lease, error)
	// Release ends l early when it is still the current lease, keeping the
	// owner and token on record; releasing a lease already lost is not an
	// error.
	Release(ctx context.Context, job string, l Lease) error
	// Commit moves the checkpoint from `from` (zero: none yet) to `to`
	// and applies u, when the stored checkpoint equals from and to is after
	// it (ErrConflict otherwise), and l is the current lease, unexpired at
	// now (ErrLeaseLost otherwise). Checks and writes are one atomic
	// conditional write. A retried Commit that finds the checkpoint already
	// at `to` under the same lease returns nil.
	Commit(ctx context.Context, job string, l Lease, now time.Time, from, to time.Time, u Update) error
	// Update applies u when l is the current lease, unexpired at now
	// (ErrLeaseLost otherwise), in one atomic conditional write.
	Update(ctx context.Context, job string, l Lease, now time.Time, u Update) error
}

// Validate reports what is wrong with u (a period without a start or with
// an end not after it, at millisecond precision; a period both set and
// dropped; a negative count), naming the field and the value. Stores call
// it before writing, and write nothing when it fails.
func (u Update) Validate() error {
	if r := u.SetRecheck; r != nil {
		if err := validPeriod("set_recheck", r.Start, r.End); err != nil {
			return err
		}
		if r.Start.UnixMilli() == u.DropRecheck.UnixMilli() && !u.DropRecheck.IsZero() {
			return fmt.Errorf("update: set_recheck and drop_recheck both name period %s", fmtMS(r.Start))
		}
	}
	if r := u.Restated; r != nil {
		if err := validPeriod("restated", r.Start, r.End); err != nil {
			return err
		}
		if r.Revision < 0 || r.ItemsBefore < 0 || r.ItemsAfter < 0 {
			return fmt.Errorf("update: restated revision %d, items_before %d, items_after %d: want no negative number",
				r.Revision, r.ItemsBefore, r.ItemsAfter)
		}
	}
	for i, e := range u.Grid {
		if e.From.IsZero() || e.Period < time.Millisecond || e.Period%time.Millisecond != 0 {
			return fmt.Errorf("update: grid[%d] from %s, period %s: want a start and a period of whole milliseconds",
				i, fmtMS(e.From), e.Period)
		}
		if i > 0 && e.From.UnixMilli() <= u.Grid[i-1].From.UnixMilli() {
			return fmt.Errorf("update: grid[%d] from %s is not after grid[%d] from %s",
				i, fmtMS(e.From), i-1, fmtMS(u.Grid[i-1].From))
		}
	}
	return nil
}

func validPeriod(field string, start, end time.Time) error {
	if start.IsZero() || end.IsZero() || end.UnixMilli() <= start.UnixMilli() {
		return fmt.Errorf("update: %s period [%s, %s): want a start and an end after it (in whole milliseconds)",
			field, fmtMS(start), fmtMS(end))
	}
	return nil
}

func fmtMS(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

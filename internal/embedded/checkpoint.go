package embedded

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// jobRecord is a job's state as the jobs bucket holds it, in JSON. Times
// are RFC 3339 UTC with milliseconds ("2024-03-01T12:00:00.000Z"), "" for
// none; records written by the first version carry nanoseconds, which are
// read and cut to milliseconds. Fields added since that version are
// omitted when empty, so its records read as having none.
//
//	{"checkpoint": "…", "lease_owner": "run-a", "lease_token": 3,
//	 "lease_expires": "…", "lease_session": "…",
//	 "rechecks": [{"start": "…", "end": "…", "read": "…"}],
//	 "restated": [{"start": "…", "end": "…", "revision": 2, "reason": "recheck",
//	               "at": "…", "items_before": 10, "items_after": 11}],
//	 "grid": [{"from": "…", "period": "1h0m0s"}]}
type jobRecord struct {
	Checkpoint   string `json:"checkpoint"`
	LeaseOwner   string `json:"lease_owner"`
	LeaseToken   int64  `json:"lease_token"`
	LeaseExpires string `json:"lease_expires"`
	// LeaseSession is the session (one Open of the file) that was granted
	// the lease; "" in records of the first version.
	LeaseSession string           `json:"lease_session,omitempty"`
	Rechecks     []recheckRecord  `json:"rechecks,omitempty"`
	Restated     []restatedRecord `json:"restated,omitempty"`
	// Grid is checkpoint.State.Grid, periods in Go's duration syntax;
	// absent in records written before grids were recorded.
	Grid []epochRecord `json:"grid,omitempty"`
}

type epochRecord struct {
	From   string `json:"from"`
	Period string `json:"period"`
}

type recheckRecord struct {
	Start string `json:"start"`
	End   string `json:"end"`
	Read  string `json:"read,omitempty"`
}

type restatedRecord struct {
	Start       string `json:"start"`
	End         string `json:"end"`
	Revision    int    `json:"revision"`
	Reason      string `json:"reason"`
	At          string `json:"at"`
	ItemsBefore int64  `json:"items_before"`
	ItemsAfter  int64  `json:"items_after"`
}

// jobState is a job's state with what Load does not show.
type jobState struct {
	checkpoint.State
	session string
}

// newSession returns a random session id for one Open of the file.
func newSession() string { return rand.Text() }

// timeLayout is RFC 3339 with exactly three fraction digits.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// msTime is t cut to whole milliseconds, in UTC; the zero time stays zero.
func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// sameMS reports whether a and b are the same millisecond (or both zero).
func sameMS(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && b.IsZero()
	}
	return a.UnixMilli() == b.UnixMilli()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return msTime(t).Format(timeLayout)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored %s %q: %w", field, s, err)
	}
	return msTime(t), nil
}

func (r jobRecord) state() (jobState, error) {
	var errs []error
	parse := func(field, s string) time.Time {
		t, err := parseTime(field, s)
		errs = append(errs, err)
		return t
	}
	st := checkpoint.State{
		Checkpoint: parse("checkpoint", r.Checkpoint),
		Lease: checkpoint.Lease{Owner: r.LeaseOwner, Token: r.LeaseToken,
			Expires: parse("lease_expires", r.LeaseExpires)},
		Rechecks: make([]checkpoint.Recheck, 0, len(r.Rechecks)),
		Restated: make([]checkpoint.Restatement, 0, len(r.Restated)),
	}
	for _, rc := range r.Rechecks {
		st.Rechecks = append(st.Rechecks, checkpoint.Recheck{
			Start: parse("rechecks.start", rc.Start),
			End:   parse("rechecks.end", rc.End),
			Read:  parse("rechecks.read", rc.Read),
		})
	}
	slices.SortFunc(st.Rechecks, func(a, b checkpoint.Recheck) int { return a.Start.Compare(b.Start) })
	for _, rs := range r.Restated {
		st.Restated = append(st.Restated, checkpoint.Restatement{
			Start: parse("restated.start", rs.Start), End: parse("restated.end", rs.End),
			Revision: rs.Revision, Reason: rs.Reason, At: parse("restated.at", rs.At),
			ItemsBefore: rs.ItemsBefore, ItemsAfter: rs.ItemsAfter,
		})
	}
	for _, e := range r.Grid {
		d, err := time.ParseDuration(e.Period)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("stored grid.period %q: want a positive duration", e.Period))
		}
		st.Grid = append(st.Grid, checkpoint.Epoch{From: parse("grid.from", e.From), Period: d})
	}
	if err := errors.Join(errs...); err != nil {
		return jobState{}, err
	}
	return jobState{State: st, session: r.LeaseSession}, nil
}

func record(js jobState) jobRecord {
	st := js.State
	r := jobRecord{
		Checkpoint:   formatTime(st.Checkpoint),
		LeaseOwner:   st.Lease.Owner,
		LeaseToken:   st.Lease.Token,
		LeaseExpires: formatTime(st.Lease.Expires),
		LeaseSession: js.session,
	}
	for _, rc := range st.Rechecks {
		r.Rechecks = append(r.Rechecks, recheckRecord{
			Start: formatTime(rc.Start), End: formatTime(rc.End), Read: formatTime(rc.Read)})
	}
	for _, rs := range st.Restated {
		r.Restated = append(r.Restated, restatedRecord{
			Start: formatTime(rs.Start), End: formatTime(rs.End), Revision: rs.Revision, Reason: rs.Reason,
			At: formatTime(rs.At), ItemsBefore: rs.ItemsBefore, ItemsAfter: rs.ItemsAfter,
		})
	}
	for _, e := range st.Grid {
		r.Grid = append(r.Grid, epochRecord{From: formatTime(e.From), Period: e.Period.String()})
	}
	return r
}

// apply applies a valid u to st, at millisecond precision.
func apply(st *checkpoint.State, u checkpoint.Update) {
	if !u.DropRecheck.IsZero() {
		st.Rechecks = slices.DeleteFunc(st.Rechecks, func(r checkpoint.Recheck) bool { return sameMS(r.Start, u.DropRecheck) })
	}
	if r := u.SetRecheck; r != nil {
		rc := checkpoint.Recheck{Start: msTime(r.Start), End: msTime(r.End), Read: msTime(r.Read)}
		i, found := slices.BinarySearchFunc(st.Rechecks, rc.Start, func(e checkpoint.Recheck, t time.Time) int {
			return cmp.Compare(e.Start.UnixMilli(), t.UnixMilli())
		})
		if found {
			st.Rechecks[i] = rc
		} else {
			st.Rechecks = slices.Insert(st.Rechecks, i, rc)
		}
	}
	if r := u.Restated; r != nil {
		st.Restated = prependRestated(st.Restated, *r)
	}
	if u.Grid != nil {
		st.Grid = make([]checkpoint.Epoch, len(u.Grid))
		for i, e := range u.Grid {
			st.Grid[i] = checkpoint.Epoch{From: msTime(e.From), Period: e.Period}
		}
	}
}

// prependRestated returns list with r in front, keeping MaxRestated. A
// list that already holds r's revision of r's period (an Update retried
// after it was applied) is returned as is.
func prependRestated(list []checkpoint.Restatement, r checkpoint.Restatement) []checkpoint.Restatement {
	for _, e := range list {
		if sameMS(e.Start, r.Start) && e.Revision == r.Revision {
			return list
		}
	}
	r.Start, r.End, r.At = msTime(r.Start), msTime(r.End), msTime(r.At)
	out := make([]checkpoint.Restatement, 0, min(len(list)+1, checkpoint.MaxRestated))
	out = append(out, r)
	return append(out, list[:min(len(list), checkpoint.MaxRestated-1)]...)
}

// Load returns the job's state; a job never seen has a zero State with
// empty (non-nil) Rechecks and Restated.
func (s *Store) Load(ctx context.Context, job string) (checkpoint.State, error) {
	var js jobState
	err := s.view(ctx, job, func(tx *bolt.Tx) (err error) {
		js, err = getJob(tx, job)
		return err
	})
	if err != nil {
		return checkpoint.State{}, fmt.Errorf("load state of job %q: %w", job, err)
	}
	return js.State, nil
}

// Acquire grants owner the lease until now+ttl when it is free, expired
// at now, already owner's, or recorded by another session (a process that
// closed the file or died: this one holds the file lock); the token grows
// by one with every grant.
func (s *Store) Acquire(ctx context.Context, job, owner string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if owner == "" || ttl <= 0 {
		return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: owner %q and ttl %s must be set", job, owner, ttl)
	}
	var l checkpoint.Lease
	err := s.update(ctx, job, func(js *jobState) error {
		if cur := js.Lease; cur.Held(now) && cur.Owner != owner && js.session == s.session {
			return &checkpoint.HeldError{Owner: cur.Owner, Expires: cur.Expires}
		}
		l = checkpoint.Lease{Owner: owner, Token: js.Lease.Token + 1, Expires: msTime(now.Add(ttl))}
		js.Lease, js.session = l, s.session
		return nil
	})
	if err != nil { // a *checkpoint.HeldError stays reachable with errors.As
		return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: %w", job, err)
	}
	return l, nil
}

func sameLease(a, b checkpoint.Lease) bool { return a.Owner == b.Owner && a.Token == b.Token }

// current reports whether l is the stored lease and unexpired at now.
func current(st checkpoint.State, l checkpoint.Lease, now time.Time) error {
	cur := st.Lease
	switch {
	case l.Owner == "" || !sameLease(cur, l):
		return fmt.Errorf("lease of %s (token %d) is now %s's (token %d): %w",
			l.Owner, l.Token, cur.Owner, cur.Token, checkpoint.ErrLeaseLost)
	case !cur.Held(now):
		return fmt.Errorf("lease of %s (token %d) expired at %s, now is %s: %w", l.Owner, l.Token,
			formatTime(cur.Expires), formatTime(now), checkpoint.ErrLeaseLost)
	}
	return nil
}

// Renew extends l to now+ttl when it is still the current lease and
// unexpired at now; else it returns ErrLeaseLost.
func (s *Store) Renew(ctx context.Context, job string, l checkpoint.Lease, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if ttl <= 0 {
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: ttl %s must be positive", job, ttl)
	}
	var renewed checkpoint.Lease
	err := s.update(ctx, job, func(js *jobState) error {
		if err := current(js.State, l, now); err != nil {
			return err
		}
		js.Lease.Expires = msTime(now.Add(ttl))
		renewed = js.Lease
		return nil
	})
	if err != nil {
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: %w", job, err)
	}
	return renewed, nil
}

// Release ends l now when it is still the current lease: the record keeps
// its owner and token, with no expiry. Releasing a lost lease is not an
// error.
func (s *Store) Release(ctx context.Context, job string, l checkpoint.Lease) error {
	err := s.update(ctx, job, func(js *jobState) error {
		if l.Owner == "" || !sameLease(js.Lease, l) {
			return errUnchanged
		}
		js.Lease.Expires = time.Time{}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return fmt.Errorf("release lease of job %q: %w", job, err)
	}
	return nil
}

// Commit moves the checkpoint from `from` to `to` and applies u, in one
// transaction, when to is after from and the stored checkpoint equals
// from (ErrConflict otherwise) and l is the current lease at now
// (ErrLeaseLost otherwise). A Commit that finds the checkpoint already at
// to under l (a retry of one that succeeded) returns nil and writes
// nothing.
func (s *Store) Commit(ctx context.Context, job string, l checkpoint.Lease, now time.Time, from, to time.Time, u checkpoint.Update) error {
	if to.IsZero() || (!from.IsZero() && to.UnixMilli() <= from.UnixMilli()) {
		return fmt.Errorf("commit checkpoint of job %q: new checkpoint %q is not after %q: %w",
			job, formatTime(to), formatTime(from), checkpoint.ErrConflict)
	}
	if err := u.Validate(); err != nil {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, err)
	}
	err := s.update(ctx, job, func(js *jobState) error {
		if l.Owner != "" && sameLease(js.Lease, l) && sameMS(js.Checkpoint, to) {
			return errUnchanged // done before: this is a retry
		}
		if err := current(js.State, l, now); err != nil {
			return err
		}
		if !sameMS(js.Checkpoint, from) {
			return fmt.Errorf("stored checkpoint is %q, expected %q: %w",
				formatTime(js.Checkpoint), formatTime(from), checkpoint.ErrConflict)
		}
		js.Checkpoint = msTime(to)
		apply(&js.State, u)
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, err)
	}
	return nil
}

// Update applies u in one transaction when l is the current lease at now;
// else it returns ErrLeaseLost and writes nothing. A restatement already
// recorded (same period start and revision) is not recorded twice.
func (s *Store) Update(ctx context.Context, job string, l checkpoint.Lease, now time.Time, u checkpoint.Update) error {
	if err := u.Validate(); err != nil {
		return fmt.Errorf("update state of job %q: %w", job, err)
	}
	err := s.update(ctx, job, func(js *jobState) error {
		if err := current(js.State, l, now); err != nil {
			return err
		}
		if u.IsZero() {
			return errUnchanged
		}
		apply(&js.State, u)
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return fmt.Errorf("update state of job %q: %w", job, err)
	}
	return nil
}

// errUnchanged makes update roll back without an error for the caller.
var errUnchanged = errors.New("unchanged")

func getJob(tx *bolt.Tx, job string) (jobState, error) {
	var r jobRecord
	if b := tx.Bucket(bucketJobs); b != nil {
		if v := b.Get([]byte(job)); v != nil {
			if err := json.Unmarshal(v, &r); err != nil {
				return jobState{}, fmt.Errorf("stored state: %w", err)
			}
		}
	}
	return r.state()
}

func (s *Store) view(ctx context.Context, job string, fn func(*bolt.Tx) error) error {
	if job == "" {
		return errors.New("job name is empty")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// update runs fn on the job's state in one write transaction and stores
// the state fn leaves, unless fn returns an error.
func (s *Store) update(ctx context.Context, job string, fn func(*jobState) error) error {
	if job == "" {
		return errors.New("job name is empty")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		js, err := getJob(tx, job)
		if err != nil {
			return err
		}
		if err := fn(&js); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		v, err := json.Marshal(record(js))
		if err != nil {
			return err
		}
		return b.Put([]byte(job), v)
	})
}

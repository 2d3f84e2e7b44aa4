package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// jobRecord is a job's state as the jobs bucket holds it. Times are
// RFC 3339 UTC with nanoseconds, "" for none.
type jobRecord struct {
	Checkpoint   string `json:"checkpoint"`
	LeaseOwner   string `json:"lease_owner"`
	LeaseToken   int64  `json:"lease_token"`
	LeaseExpires string `json:"lease_expires"`
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored %s %q: %w", field, s, err)
	}
	return t.UTC(), nil
}

func (r jobRecord) state() (checkpoint.State, error) {
	cp, err := parseTime("checkpoint", r.Checkpoint)
	if err != nil {
		return checkpoint.State{}, err
	}
	exp, err := parseTime("lease_expires", r.LeaseExpires)
	if err != nil {
		return checkpoint.State{}, err
	}
	return checkpoint.State{
		Checkpoint: cp,
		Lease:      checkpoint.Lease{Owner: r.LeaseOwner, Token: r.LeaseToken, Expires: exp},
	}, nil
}

func record(st checkpoint.State) jobRecord {
	return jobRecord{
		Checkpoint:   formatTime(st.Checkpoint),
		LeaseOwner:   st.Lease.Owner,
		LeaseToken:   st.Lease.Token,
		LeaseExpires: formatTime(st.Lease.Expires),
	}
}

// Load returns the job's state; a job never seen has a zero State.
func (s *Store) Load(ctx context.Context, job string) (checkpoint.State, error) {
	var st checkpoint.State
	err := s.view(ctx, job, func(tx *bolt.Tx) (err error) {
		st, err = getJob(tx, job)
		return err
	})
	if err != nil {
		return checkpoint.State{}, fmt.Errorf("load state of job %q: %w", job, err)
	}
	return st, nil
}

// Acquire grants owner the lease until now+ttl when it is free, expired
// at now, or already owner's; the token grows by one with every grant.
func (s *Store) Acquire(ctx context.Context, job, owner string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if owner == "" || ttl <= 0 {
		return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: owner %q and ttl %s must be set", job, owner, ttl)
	}
	var l checkpoint.Lease
	err := s.update(ctx, job, func(st *checkpoint.State) error {
		if cur := st.Lease; cur.Held(now) && cur.Owner != owner {
			return &checkpoint.HeldError{Owner: cur.Owner, Expires: cur.Expires}
		}
		l = checkpoint.Lease{Owner: owner, Token: st.Lease.Token + 1, Expires: now.Add(ttl).UTC()}
		st.Lease = l
		return nil
	})
	if err != nil { // a *checkpoint.HeldError stays reachable with errors.As
		return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: %w", job, err)
	}
	return l, nil
}

// current reports whether l is the stored lease and unexpired at now.
func current(st checkpoint.State, l checkpoint.Lease, now time.Time) error {
	cur := st.Lease
	switch {
	case cur.Owner != l.Owner || cur.Token != l.Token:
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
	err := s.update(ctx, job, func(st *checkpoint.State) error {
		if err := current(*st, l, now); err != nil {
			return err
		}
		st.Lease.Expires = now.Add(ttl).UTC()
		renewed = st.Lease
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
	err := s.update(ctx, job, func(st *checkpoint.State) error {
		if st.Lease.Owner != l.Owner || st.Lease.Token != l.Token {
			return errUnchanged
		}
		st.Lease.Expires = time.Time{}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return fmt.Errorf("release lease of job %q: %w", job, err)
	}
	return nil
}

// Commit moves the checkpoint from `from` to `to` when l is the current
// lease at now (ErrLeaseLost otherwise), the stored checkpoint equals from
// and to is after it (ErrConflict otherwise).
func (s *Store) Commit(ctx context.Context, job string, l checkpoint.Lease, now time.Time, from, to time.Time) error {
	err := s.update(ctx, job, func(st *checkpoint.State) error {
		if err := current(*st, l, now); err != nil {
			return err
		}
		if !st.Checkpoint.Equal(from) {
			return fmt.Errorf("stored checkpoint is %q, expected %q: %w",
				formatTime(st.Checkpoint), formatTime(from), checkpoint.ErrConflict)
		}
		if !to.After(from) {
			return fmt.Errorf("new checkpoint %q is not after %q: %w",
				formatTime(to), formatTime(from), checkpoint.ErrConflict)
		}
		st.Checkpoint = to.UTC()
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, err)
	}
	return nil
}

// errUnchanged makes update roll back without an error for the caller.
var errUnchanged = errors.New("unchanged")

func getJob(tx *bolt.Tx, job string) (checkpoint.State, error) {
	b := tx.Bucket(bucketJobs)
	if b == nil {
		return checkpoint.State{}, nil
	}
	v := b.Get([]byte(job))
	if v == nil {
		return checkpoint.State{}, nil
	}
	var r jobRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return checkpoint.State{}, fmt.Errorf("stored state: %w", err)
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
func (s *Store) update(ctx context.Context, job string, fn func(*checkpoint.State) error) error {
	if job == "" {
		return errors.New("job name is empty")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		st, err := getJob(tx, job)
		if err != nil {
			return err
		}
		if err := fn(&st); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		v, err := json.Marshal(record(st))
		if err != nil {
			return err
		}
		return b.Put([]byte(job), v)
	})
}

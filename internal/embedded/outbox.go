package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/outbox"
)

var _ outbox.Store = (*Store)(nil)

// bucketOutbox holds one nested bucket per job: entry id -> the entry as
// JSON (outboxRecord). Times are RFC 3339 UTC with milliseconds.
var bucketOutbox = []byte("outbox")

// bucketOutboxPending indexes what is pending: one nested bucket per job,
// entry id -> nothing, for each entry not sent yet; so that Pending reads
// what is pending, not the whole outbox. A job's index is made by its
// first outbox write (from the outbox as it is, for a file written before
// the index); until then Pending reads the whole outbox.
//
// The index bucket's sequence is how many entries the job's outbox had
// when the index last accounted for them. An earlier binary (a release
// rolled back) writes the outbox without the index: the entries it adds
// make the outbox's count differ, and Pending then reads the whole outbox
// until the next Enqueue makes the index again; an entry it marks sent is
// left out by Pending, which checks each indexed entry's state.
var bucketOutboxPending = []byte("outbox-pending")

type outboxRecord struct {
	Kind        string `json:"kind"`
	Target      string `json:"target,omitempty"`
	At          string `json:"at"`
	Payload     []byte `json:"payload,omitempty"`
	Attempts    int    `json:"attempts,omitempty"`
	NextAttempt string `json:"next_attempt,omitempty"`
	LastError   string `json:"last_error,omitempty"`
	Sent        string `json:"sent,omitempty"`
	Resends     int    `json:"resends,omitempty"`
}

func outboxRec(e outbox.Entry) outboxRecord {
	return outboxRecord{Kind: e.Kind, Target: e.Target, At: formatTime(e.At), Payload: e.Payload, Attempts: e.Attempts,
		NextAttempt: formatTime(e.NextAttempt), LastError: e.LastError, Sent: formatTime(e.Sent), Resends: e.Resends}
}

func (r outboxRecord) entry(id string) (outbox.Entry, error) {
	e := outbox.Entry{ID: id, Kind: r.Kind, Target: r.Target, Payload: r.Payload, Attempts: r.Attempts, LastError: r.LastError, Resends: r.Resends}
	var errs []error
	for _, f := range []struct {
		name string
		s    string
		t    *time.Time
	}{{"at", r.At, &e.At}, {"next_attempt", r.NextAttempt, &e.NextAttempt}, {"sent", r.Sent, &e.Sent}} {
		t, err := parseTime("outbox "+id+" "+f.name, f.s)
		errs = append(errs, err)
		*f.t = t
	}
	return e, errors.Join(errs...)
}

// fenced runs fn in one write transaction when l is the job's current
// lease, unexpired at now.
func (s *Store) fenced(ctx context.Context, job string, l checkpoint.Lease, now time.Time, fn func(*bolt.Tx) error) error {
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
		if err := current(js.State, l, now); err != nil {
			return err
		}
		return fn(tx)
	})
}

func outboxBucket(tx *bolt.Tx, job string) (*bolt.Bucket, error) {
	b, err := tx.CreateBucketIfNotExists(bucketOutbox)
	if err != nil {
		return nil, err
	}
	return b.CreateBucketIfNotExists([]byte(job))
}

// pendingIndex returns job's pending index, made from the outbox ob when
// it does not exist yet, or, when current, when it does not account for
// every entry of ob (see bucketOutboxPending).
func pendingIndex(tx *bolt.Tx, job string, ob *bolt.Bucket, current bool) (*bolt.Bucket, error) {
	root, err := tx.CreateBucketIfNotExists(bucketOutboxPending)
	if err != nil {
		return nil, err
	}
	if p := root.Bucket([]byte(job)); p != nil {
		if !current || indexCurrent(p, ob) {
			return p, nil
		}
		if err := root.DeleteBucket([]byte(job)); err != nil {
			return nil, err
		}
	}
	p, err := root.CreateBucket([]byte(job))
	if err != nil {
		return nil, err
	}
	n := uint64(0)
	err = ob.ForEach(func(k, v []byte) error {
		n++
		var r outboxRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("stored outbox entry %s: %w", k, err)
		}
		if r.Sent == "" {
			return p.Put(bytes.Clone(k), []byte{})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, p.SetSequence(n)
}

// indexCurrent reports whether the pending index p accounts for every
// entry of the outbox ob (counting ob's keys reads its pages' headers,
// not its entries).
func indexCurrent(p, ob *bolt.Bucket) bool {
	return p.Sequence() == uint64(ob.Stats().KeyN)
}

// index puts e's id in the pending index p, or takes it out once sent.
func index(p *bolt.Bucket, e outbox.Entry) error {
	if e.Sent.IsZero() {
		return p.Put([]byte(e.ID), []byte{})
	}
	return p.Delete([]byte(e.ID))
}

// Enqueue implements outbox.Store.
func (s *Store) Enqueue(ctx context.Context, job string, l checkpoint.Lease, now time.Time, es []outbox.Entry) (int, error) {
	for _, e := range es {
		if err := e.Validate(); err != nil {
			return 0, fmt.Errorf("enqueue: %w", err)
		}
	}
	added := 0
	err := s.fenced(ctx, job, l, now, func(tx *bolt.Tx) error {
		added = 0
		b, err := outboxBucket(tx, job)
		if err != nil {
			return err
		}
		p, err := pendingIndex(tx, job, b, true)
		if err != nil {
			return err
		}
		for _, e := range es {
			if b.Get([]byte(e.ID)) != nil {
				continue
			}
			v, err := json.Marshal(outboxRec(e))
			if err != nil {
				return err
			}
			if err := b.Put([]byte(e.ID), v); err != nil {
				return err
			}
			if err := index(p, e); err != nil {
				return err
			}
			added++
		}
		if added == 0 {
			return nil
		}
		return p.SetSequence(p.Sequence() + uint64(added))
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue deliveries of job %q: %w", job, err)
	}
	return added, nil
}

// Record implements outbox.Store.
func (s *Store) Record(ctx context.Context, job string, l checkpoint.Lease, now time.Time, e outbox.Entry) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	err := s.fenced(ctx, job, l, now, func(tx *bolt.Tx) error {
		b, err := outboxBucket(tx, job)
		if err != nil {
			return err
		}
		v := b.Get([]byte(e.ID))
		if v == nil {
			return fmt.Errorf("%w: %s", outbox.ErrNotFound, e.ID)
		}
		var r outboxRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("stored outbox entry %s: %w", e.ID, err)
		}
		n := outboxRec(e)
		r.Attempts, r.NextAttempt, r.LastError, r.Sent, r.Resends = n.Attempts, n.NextAttempt, n.LastError, n.Sent, n.Resends
		nv, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(e.ID), nv); err != nil {
			return err
		}
		p, err := pendingIndex(tx, job, b, false)
		if err != nil {
			return err
		}
		return index(p, e)
	})
	if err != nil {
		return fmt.Errorf("record delivery %s of job %q: %w", e.ID, job, err)
	}
	return nil
}

// Pending implements outbox.Store: from the pending index, or, for a job
// whose outbox was written before the index, from the whole outbox.
func (s *Store) Pending(ctx context.Context, job string) ([]string, error) {
	var out []string
	indexed := false
	err := s.view(ctx, job, func(tx *bolt.Tx) error {
		pr := tx.Bucket(bucketOutboxPending)
		if pr == nil || pr.Bucket([]byte(job)) == nil {
			return nil
		}
		ob := tx.Bucket(bucketOutbox)
		if ob == nil || ob.Bucket([]byte(job)) == nil {
			return nil
		}
		b := ob.Bucket([]byte(job))
		if !indexCurrent(pr.Bucket([]byte(job)), b) {
			return nil
		}
		indexed = true
		return pr.Bucket([]byte(job)).ForEach(func(k, _ []byte) error {
			v := b.Get(k)
			if v == nil {
				return fmt.Errorf("pending outbox entry %s: not in the outbox", k)
			}
			var r struct {
				Sent string `json:"sent"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("stored outbox entry %s: %w", k, err)
			}
			if r.Sent != "" {
				return nil // sent by an earlier binary, which knows no index
			}
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	if indexed {
		return out, nil
	}
	es, err := s.outboxList(ctx, job, func(e outbox.Entry) bool { return e.Sent.IsZero() })
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out, err
}

// Since implements outbox.Store.
func (s *Store) Since(ctx context.Context, job string, t time.Time) ([]outbox.Entry, error) {
	return s.outboxList(ctx, job, func(e outbox.Entry) bool { return !e.At.Before(msTime(t)) })
}

func (s *Store) outboxList(ctx context.Context, job string, keep func(outbox.Entry) bool) ([]outbox.Entry, error) {
	var out []outbox.Entry
	err := s.view(ctx, job, func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketOutbox)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(job))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r outboxRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("stored outbox entry %s: %w", k, err)
			}
			e, err := r.entry(string(bytes.Clone(k)))
			if err != nil {
				return err
			}
			if keep(e) {
				out = append(out, e)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	return out, nil
}

// Get implements outbox.Store.
func (s *Store) Get(ctx context.Context, job string, ids []string) (map[string]outbox.Entry, error) {
	out := map[string]outbox.Entry{}
	err := s.view(ctx, job, func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketOutbox)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(job))
		if b == nil {
			return nil
		}
		for _, id := range ids {
			v := b.Get([]byte(id))
			if v == nil {
				continue
			}
			var r outboxRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("stored outbox entry %s: %w", id, err)
			}
			e, err := r.entry(id)
			if err != nil {
				return err
			}
			out[id] = e
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	return out, nil
}

package dedupeindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

// Sightings (collect.SightingIndex) have buckets of their own:
//
//	sightings / <job> / byid     <key> -> version 1, expires (s)
//	sightings / <job> / expiry   <expires><key> -> ""
//
// <key> is uvarint(len(id)), id, <start> (the period start, sortable ms),
// then the kind byte ('d' dropped, 'r' rejected): the sightings of one id
// are the keys under its prefix. RecordSightings first removes up to
// sightingSweep sightings that expired at or before its sweep time, by the
// expiry bucket, so that the sightings are swept as the claims are.

var (
	bucketSightings = []byte("sightings")
	bucketByID      = []byte("byid")
)

const sightingSweep = 1000

var _ collect.SightingIndex = (*Index)(nil)

var sightingKinds = map[string]byte{collect.SightingDropped: 'd', collect.SightingRejected: 'r'}

func sightingPrefix(id string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(id))), id...)
}

// RecordSightings implements collect.SightingIndex in one write
// transaction.
func (ix *Index) RecordSightings(ctx context.Context, job string, ss []collect.Sighting, sweep time.Time) error {
	if err := collect.CheckJob(job); err != nil {
		return fmt.Errorf("record sightings: %w", err)
	}
	for _, s := range ss {
		if err := collect.CheckID(s.ID); err != nil {
			return fmt.Errorf("record sightings of job %q: %w", job, err)
		}
		if _, ok := sightingKinds[s.Kind]; !ok {
			return fmt.Errorf("record sightings of job %q: kind %q", job, s.Kind)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("record sightings of job %q: %w", job, err)
	}
	keyed := keyedSightings(ss)
	err := ix.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketSightings)
		if err != nil {
			return err
		}
		jb, err := root.CreateBucketIfNotExists([]byte(job))
		if err != nil {
			return err
		}
		byID, err := jb.CreateBucketIfNotExists(bucketByID)
		if err != nil {
			return err
		}
		expiry, err := jb.CreateBucketIfNotExists(bucketExpiry)
		if err != nil {
			return err
		}
		// Sweep what expired, a batch at a time.
		c := expiry.Cursor()
		limit := sortable(sweep.Unix())
		var gone [][]byte
		for k, _ := c.First(); k != nil && len(gone) < sightingSweep && bytes.Compare(k[:8], limit) <= 0; k, _ = c.Next() {
			gone = append(gone, bytes.Clone(k))
		}
		for _, k := range gone {
			if err := expiry.Delete(k); err != nil {
				return err
			}
			// Only when the record still has this expiry (not rewritten later).
			if v := byID.Get(k[8:]); v != nil && len(v) == 9 && bytes.Equal(v[1:], k[:8]) {
				if err := byID.Delete(k[8:]); err != nil {
					return err
				}
			}
		}
		for _, ks := range keyed {
			s, key := ks.s, ks.key
			exp := sortable(s.Expires.Unix())
			if old := byID.Get(key); len(old) == 9 {
				if bytes.Compare(old[1:], exp) >= 0 {
					continue // kept as long already
				}
				if err := expiry.Delete(append(bytes.Clone(old[1:]), key...)); err != nil {
					return err
				}
			}
			if err := byID.Put(key, append([]byte{indexVersion}, exp...)); err != nil {
				return err
			}
			if err := expiry.Put(append(bytes.Clone(exp), key...), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record sightings of job %q in %s: %w", job, ix.path, err)
	}
	return nil
}

// Sightings implements collect.SightingIndex in one read transaction.
func (ix *Index) Sightings(ctx context.Context, job, id string) ([]collect.Sighting, error) {
	if err := collect.CheckJob(job); err != nil {
		return nil, fmt.Errorf("read sightings: %w", err)
	}
	if err := collect.CheckID(id); err != nil {
		return nil, fmt.Errorf("read sightings of job %q: %w", job, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read sightings of job %q: %w", job, err)
	}
	var out []collect.Sighting
	err := ix.db.View(func(tx *bolt.Tx) error {
		b := nested(nested(tx.Bucket(bucketSightings), []byte(job)), bucketByID)
		if b == nil {
			return nil
		}
		prefix := sightingPrefix(id)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			rest := k[len(prefix):]
			if len(rest) != 9 || len(v) != 9 || v[0] != indexVersion {
				return fmt.Errorf("corrupt sighting of %q (%d, %d bytes)", clip(id), len(rest), len(v))
			}
			s := collect.Sighting{ID: id, Period: time.UnixMilli(unsortable(rest[:8])).UTC(), Expires: time.Unix(unsortable(v[1:]), 0).UTC()}
			for kind, b := range sightingKinds {
				if b == rest[8] {
					s.Kind = kind
				}
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sightings of job %q in %s: %w", job, ix.path, err)
	}
	return out, nil
}

// keyedSighting is a sighting with its key in the by-id bucket.
type keyedSighting struct {
	key []byte
	s   *collect.Sighting
}

// keyedSightings returns ss with their keys, in key order (ties in the
// order of ss): the order RecordSightings puts them in. bbolt splits a
// transaction's leaves only at its commit, so each Put moves the keys
// after it in its leaf; keys put in id order (which the uvarint length
// prefix does not keep) made a big period's sightings quadratic (minutes
// for 200,000 re-sent copies, past the run's lease).
func keyedSightings(ss []collect.Sighting) []keyedSighting {
	keyed := make([]keyedSighting, len(ss))
	for i := range ss {
		s := &ss[i]
		keyed[i] = keyedSighting{append(append(sightingPrefix(s.ID), sortable(s.Period.UnixMilli())...), sightingKinds[s.Kind]), s}
	}
	slices.SortStableFunc(keyed, func(a, b keyedSighting) int { return bytes.Compare(a.key, b.key) })
	return keyed
}

package dedupeindex

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxRuns is how many committed runs of a job Lookup reads, each through
// its filter: NewClaimWriter moves the claims of the older ones into the
// by-id bucket (compact), so that a look-up costs at most maxRuns filter
// probes and one read of that bucket however many periods are kept.
var maxRuns = 24

// compact moves the claims of the job's oldest committed runs into the
// by-id bucket until at most maxRuns runs are left (see compactRun).
func (ix *Index) compact(ctx context.Context, job string) error {
	for {
		var oldest []byte
		err := ix.db.View(func(tx *bolt.Tx) error {
			filters, _ := jobBucket(tx, job, bucketFilters, false)
			if filters == nil {
				return nil
			}
			n := 0
			c := filters.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if n++; n > maxRuns {
					first, _ := c.First()
					oldest = append([]byte(nil), first...)
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("compact runs in %s: %w", ix.path, err)
		}
		if oldest == nil {
			return nil
		}
		if err := ix.compactRun(ctx, job, oldest); err != nil {
			return fmt.Errorf("compact runs in %s: %w", ix.path, err)
		}
	}
}

// compactRun moves the claims of the committed run whose filter key is key
// into the by-id bucket, indexBatch ids per transaction, then deletes its
// filter (Lookup then reads them there; the run keeps its values, for its
// period's next writer). A claim of a later period in the by-id bucket
// stays: the latest period's claim is the id's. Until the last
// transaction Lookup reads the run too; a move cut short is done again
// (the same claims are put again).
func (ix *Index) compactRun(ctx context.Context, job string, key []byte) error {
	start, gen := key[:8], key[8:]
	period := unsortable(start)
	var from []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done := false
		err := ix.db.Update(func(tx *bolt.Tx) error {
			filters, _ := jobBucket(tx, job, bucketFilters, false)
			if filters == nil || filters.Get(key) == nil {
				done = true
				return nil
			}
			_, _, lists, _ := jobPeriods(tx, job, false)
			run := nested(nested(lists, start), gen)
			if run == nil {
				done = true
				return filters.Delete(key)
			}
			root, err := tx.CreateBucketIfNotExists(bucketClaims)
			if err != nil {
				return err
			}
			base, err := root.CreateBucketIfNotExists([]byte(job))
			if err != nil {
				return err
			}
			c := run.Cursor()
			k, v := c.First()
			if from != nil {
				k, v = c.Seek(from)
			}
			for n := 0; k != nil && n < indexBatch; k, v = c.Next() {
				n++
				if len(v) == 0 {
					continue
				}
				if cur := base.Get(k); cur != nil {
					cl, err := decodeClaim(cur)
					if err != nil {
						return fmt.Errorf("claim of %q: %w", clip(string(k)), err)
					}
					if cl.period > period {
						continue
					}
				}
				if err := base.Put(append([]byte(nil), k...), append([]byte(nil), v...)); err != nil {
					return err
				}
			}
			if k != nil {
				from = append([]byte(nil), k...)
				return nil
			}
			done = true
			return filters.Delete(key)
		})
		if err != nil {
			return fmt.Errorf("run of period %s generation %d: %w", formatTime(time.UnixMilli(period)), binary.BigEndian.Uint64(gen), err)
		}
		if done {
			return nil
		}
	}
}

package dedupeindex

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// sweep deletes the job's lists whose expiry is at or before now, each
// whole (every generation, its filter and writers keys, its head) in one
// transaction: its claims in merged runs are invalid once its head is gone
// (see validity), and go with the next merge of their run or with the run.
func (ix *Index) sweep(ctx context.Context, job string, now time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sweep expired lists: %w", err)
		}
		found := false
		err := ix.db.Update(func(tx *bolt.Tx) error {
			heads, expiry, lists, _ := jobPeriods(tx, job, false)
			if expiry == nil {
				return nil
			}
			k, _ := expiry.Cursor().First()
			if k == nil || len(k) != 16 || unsortable(k[:8]) > now.Unix() {
				return nil
			}
			found = true
			return sweepList(tx, job, heads, expiry, lists, append([]byte(nil), k...))
		})
		if err != nil {
			return fmt.Errorf("sweep expired lists in %s: %w", ix.path, err)
		}
		if !found {
			return nil
		}
	}
}

// sweepList deletes the list whose expiry key is ek: its generations
// (committed, and of writers that never committed), their filters and
// writers keys, and its head.
func sweepList(tx *bolt.Tx, job string, heads, expiry, lists *bolt.Bucket, ek []byte) error {
	start := ek[8:]
	if nested(lists, start) != nil {
		if err := lists.DeleteBucket(start); err != nil {
			return err
		}
	}
	for _, name := range [][]byte{bucketFilters, bucketWriters} {
		b, _ := jobBucket(tx, job, name, false)
		if err := deleteRunKeys(b, start, ^uint64(0)); err != nil {
			return err
		}
	}
	if heads.Get(start) != nil {
		if err := heads.Delete(start); err != nil {
			return err
		}
	}
	return expiry.Delete(ek)
}

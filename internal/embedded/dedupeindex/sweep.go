package dedupeindex

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// sweep deletes the job's lists whose expiry is at or before now, with
// their runs and the claims that still point to their periods. Without a
// by-id bucket a list goes whole, in one transaction; with one (see
// sweepBatch) its ids are walked, indexBatch per transaction, and the
// first transaction on a list marks its head as being swept (PeriodIDs
// then ignores it), so that a sweep cut short (a crash, ctx ending) is
// finished by the next one.
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
			return sweepBatch(tx, job, heads, expiry, lists, append([]byte(nil), k...))
		})
		if err != nil {
			return fmt.Errorf("sweep expired lists in %s: %w", ix.path, err)
		}
		if !found {
			return nil
		}
	}
}

// sweepBatch sweeps up to indexBatch ids of the list whose expiry key is
// ek (of its committed generation and of the writers of its period that
// never committed), and the whole list when none are left.
func sweepBatch(tx *bolt.Tx, job string, heads, expiry, lists *bolt.Bucket, ek []byte) error {
	start := ek[8:]
	v := heads.Get(start)
	var h headValue
	if v != nil {
		var err error
		if h, err = decodeHead(v); err != nil {
			return err
		}
		if h.flags&flagSweeping == 0 {
			h.flags |= flagSweeping
			if err := heads.Put(start, h.encode()); err != nil {
				return err
			}
		}
	}
	gens := nested(lists, start)
	claims := nested(tx.Bucket(bucketClaims), []byte(job))
	if gens != nil && claims != nil {
		// Claims of the legacy by-id bucket may point to the period: each
		// id of every generation is looked at, indexBatch per
		// transaction. Without that bucket, the period's runs hold all
		// its claims, and go whole.
		//
		// Every generation: the committed list's and those of writers
		// that never committed (their claims point to this period too).
		var names [][]byte
		if err := gens.ForEachBucket(func(k []byte) error {
			names = append(names, append([]byte(nil), k...))
			return nil
		}); err != nil {
			return err
		}
		budget := indexBatch
		for _, name := range names {
			list := gens.Bucket(name)
			var ids [][]byte
			c := list.Cursor()
			for k, _ := c.First(); k != nil && len(ids) < budget; k, _ = c.Next() {
				ids = append(ids, append([]byte(nil), k...))
			}
			for _, id := range ids {
				if err := deleteClaimOf(claims, string(id), unsortable(start)); err != nil {
					return err
				}
				if err := list.Delete(id); err != nil {
					return err
				}
			}
			if budget -= len(ids); budget == 0 {
				return nil // more next time
			}
		}
	}
	if gens != nil {
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
	if claims != nil {
		// The legacy bucket goes when its last claim does.
		if k, _ := claims.Cursor().First(); k == nil {
			if err := tx.Bucket(bucketClaims).DeleteBucket([]byte(job)); err != nil {
				return err
			}
		}
	}
	if v != nil {
		if err := heads.Delete(start); err != nil {
			return err
		}
	}
	return expiry.Delete(ek)
}

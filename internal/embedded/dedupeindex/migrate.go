package dedupeindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Legacy reports whether the file of tx holds claims in the by-id layout
// (claims/<job>, written before runs): Migrate must run before the index
// is used.
func Legacy(tx *bolt.Tx) bool { return tx.Bucket(bucketClaims) != nil }

// Migrate moves the claims of the by-id layout into runs, once, then calls
// finish in the transaction that deletes the by-id buckets (the store
// records its new format there). The caller must be the only user of db
// (the embedded store calls it from Open: bbolt's file lock keeps every
// other process out).
//
// Each list generation of each period gets, in one transaction per
// period, the claim values its ids have in the by-id bucket when they
// point to the period (one sequential pass over the list, reading the
// by-id bucket in id order); the committed generation gets a filter (a
// level-0 run, which the merges then pack), the others a writers key (read
// by Lookup for every id, as those of writers that never committed are).
// A by-id claim that no list of its period lists is dropped: the by-id
// layout wrote the id into the list with the claim, in one transaction.
// Every step can be done again: a migration cut short (a crash) is done
// again by the next Open, from the start (its first transaction deletes
// the filters and writers keys a cut migration wrote: see resetRuns),
// until the last transaction deletes the by-id buckets and calls finish.
func Migrate(ctx context.Context, db *bolt.DB, path string, finish func(tx *bolt.Tx) error) error {
	var jobs [][]byte
	err := db.View(func(tx *bolt.Tx) error {
		if root := tx.Bucket(bucketPeriods); root != nil {
			return root.ForEachBucket(func(k []byte) error {
				jobs = append(jobs, bytes.Clone(k))
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate the dedupe index of %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return resetRuns(tx, jobs) }); err != nil {
		return fmt.Errorf("migrate the dedupe index of %s: %w", path, err)
	}
	lastGens := map[string]uint64{}
	for _, job := range jobs {
		g, err := migrateJob(ctx, db, string(job))
		if err != nil {
			return fmt.Errorf("migrate the dedupe index of job %q in %s: %w", job, path, err)
		}
		lastGens[string(job)] = g
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for job, g := range lastGens {
			jb := tx.Bucket(bucketPeriods).Bucket([]byte(job))
			if v := jb.Get(keyLastGen); len(v) == 8 && binary.BigEndian.Uint64(v) >= g {
				continue
			}
			if err := jb.Put(keyLastGen, genKey(g)); err != nil {
				return err
			}
		}
		if tx.Bucket(bucketClaims) != nil {
			if err := tx.DeleteBucket(bucketClaims); err != nil {
				return err
			}
		}
		return finish(tx)
	})
	if err != nil {
		return fmt.Errorf("migrate the dedupe index of %s: %w", path, err)
	}
	return nil
}

// resetRuns deletes the filters and writers keys of jobs: in a store of
// the by-id layout only a migration cut short wrote them, and the binary
// from before, which still opens such a store (its marker is set by the
// migration's last transaction), may have replaced or swept the
// generations they name since. A filter left naming a deleted generation
// would make every merge fail; the migration writes them all again.
func resetRuns(tx *bolt.Tx, jobs [][]byte) error {
	for _, job := range jobs {
		jb := tx.Bucket(bucketPeriods).Bucket(job)
		for _, name := range [][]byte{bucketFilters, bucketWriters} {
			if jb.Bucket(name) == nil {
				continue
			}
			if err := jb.DeleteBucket(name); err != nil {
				return fmt.Errorf("job %q: delete %s: %w", job, name, err)
			}
		}
	}
	return nil
}

// migrateJob migrates job's lists, one period per transaction, and
// returns the highest generation it has.
func migrateJob(ctx context.Context, db *bolt.DB, job string) (uint64, error) {
	var (
		starts  [][]byte
		lastGen uint64
	)
	err := db.View(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, job, false)
		if lists == nil {
			return nil
		}
		return lists.ForEachBucket(func(k []byte) error {
			starts = append(starts, bytes.Clone(k))
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	for _, start := range starts {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		err := db.Update(func(tx *bolt.Tx) error {
			g, err := migratePeriod(tx, job, start)
			lastGen = max(lastGen, g)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("period %s: %w", formatTime(time.UnixMilli(unsortable(start))), err)
		}
	}
	return lastGen, nil
}

// migratePeriod migrates the list generations of the period starting at
// start (see Migrate) and returns the highest.
func migratePeriod(tx *bolt.Tx, job string, start []byte) (uint64, error) {
	heads, _, lists, _ := jobPeriods(tx, job, false)
	gens := lists.Bucket(start)
	var head headValue
	if v := heads.Get(start); v != nil {
		h, err := decodeHead(v)
		if err != nil {
			return 0, err
		}
		head = h
	}
	base := nested(tx.Bucket(bucketClaims), []byte(job))
	period := unsortable(start)
	var names [][]byte
	err := gens.ForEachBucket(func(k []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("corrupt generation key %x", k)
		}
		names = append(names, bytes.Clone(k))
		return nil
	})
	if err != nil {
		return 0, err
	}
	var last uint64
	for _, name := range names {
		gen := binary.BigEndian.Uint64(name)
		last = max(last, gen)
		list := gens.Bucket(name)
		// Lists are packed from format reportjob/3 on, which is never
		// migrated: a store of the by-id layout has none.
		if packed, err := packedList(list); err != nil || packed {
			return 0, fmt.Errorf("generation %d: a packed list in a store of the by-id layout (%v)", gen, err)
		}
		if base != nil {
			if err := fillList(list, base, period); err != nil {
				return 0, fmt.Errorf("generation %d: %w", gen, err)
			}
		}
		if head.gen == gen {
			filters, err := jobBucket(tx, job, bucketFilters, true)
			if err != nil {
				return 0, err
			}
			if err := filters.Put(runKey(start, gen), buildFilter(list)); err != nil {
				return 0, err
			}
			continue
		}
		if head.gen != gen {
			writers, err := jobBucket(tx, job, bucketWriters, true)
			if err != nil {
				return 0, err
			}
			if err := writers.Put(runKey(start, gen), nil); err != nil {
				return 0, err
			}
		}
	}
	return last, nil
}

// fillList gives each id of list without a claim value its by-id claim
// when that points to the period (ms): ids in order, each value put in
// place.
func fillList(list, base *bolt.Bucket, period int64) error {
	type put struct{ k, v []byte }
	var puts []put
	err := list.ForEach(func(k, v []byte) error {
		if len(v) > 0 {
			return nil
		}
		bv := base.Get(k)
		if bv == nil {
			return nil
		}
		c, err := decodeClaim(bv)
		if err != nil {
			return fmt.Errorf("claim of %q: %w", clip(string(k)), err)
		}
		if c.period == period {
			puts = append(puts, put{bytes.Clone(k), bytes.Clone(bv)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range puts {
		if err := list.Put(p.k, p.v); err != nil {
			return err
		}
	}
	return nil
}

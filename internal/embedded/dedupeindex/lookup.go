package dedupeindex

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

// Lookup implements collect.Index in one read transaction.
func (ix *Index) Lookup(ctx context.Context, job string, ids []string) ([]collect.Claim, error) {
	if err := collect.CheckJob(job); err != nil {
		return nil, fmt.Errorf("look up claims: %w", err)
	}
	// Distinct ids in byte order: the reads walk the claims' pages in
	// order (callers usually pass them sorted already).
	ascending := true // strictly: the ids are already distinct and in order
	for i, id := range ids {
		if err := collect.CheckID(id); err != nil {
			return nil, fmt.Errorf("look up claims of job %q: %w", job, err)
		}
		if i > 0 && id <= ids[i-1] {
			ascending = false
		}
	}
	seen := ids // not changed
	if !ascending {
		seen = slices.Clone(ids)
		slices.Sort(seen)
		seen = slices.Compact(seen)
	}
	if len(seen) > collect.MaxLookup {
		return nil, fmt.Errorf("look up claims of job %q: %d distinct ids, at most %d per call", job, len(seen), collect.MaxLookup)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("look up claims of job %q: %w", job, err)
	}
	var claims []collect.Claim
	err := ix.db.View(func(tx *bolt.Tx) error {
		// Each bucket opened once: a bucket is looked up by a B+tree
		// search.
		jb := nested(tx.Bucket(bucketPeriods), []byte(job))
		if jb == nil {
			return nil
		}
		lists := jb.Bucket(bucketLists)
		runs, err := jobRuns(lists, jb.Bucket(bucketFilters), jb.Bucket(bucketWriters))
		if err != nil {
			return err
		}
		merged, err := mergedRuns(jb.Bucket(bucketMergedMeta))
		if err != nil {
			return err
		}
		mergedBlocks := jb.Bucket(bucketMerged)
		val := newValidity(jb.Bucket(bucketHeads))
		var kb []byte // the id's bytes: one buffer for every id
		for _, id := range seen {
			kb = append(kb[:0], id...)
			h := idHash(kb)
			var (
				c     claimValue
				found bool
				after = int64(math.MinInt64)
			)
			for i := range runs {
				r := &runs[i]
				if r.filter != nil && !mayHold(r.filter, h) {
					continue
				}
				var err error
				if c, found, err = r.get(lists, kb); err != nil {
					return fmt.Errorf("claim of %q: generation %d of period %s: %w",
						clip(id), r.gen, formatTime(time.UnixMilli(unsortable(r.start))), err)
				}
				if found {
					after = c.period
					break
				}
			}
			// A merged run's claim counts when its period is later (the
			// same period's is an older generation, or the same).
			if len(merged) > 0 {
				e, ok, err := lookupMerged(mergedBlocks, merged, val, kb, h, after)
				if err != nil {
					return fmt.Errorf("claim of %q: %w", clip(id), err)
				}
				if ok {
					c, found = e.c, true
				}
			}
			if found {
				claims = append(claims, c.claim(id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up claims of job %q in %s: %w", job, ix.path, err)
	}
	return claims, nil
}

// probe is a run Lookup reads: a generation bucket of a period, with its
// filter (nil: a writer's generation, not committed). The bucket is
// opened when an id may be in it.
type probe struct {
	start  []byte
	gen    uint64
	filter []byte
	opened bool
	list   *listReader // nil: the run is gone (a writer's empty generation, deleted) or empty
	// last is the last id of a writer's generation (nil: every id is read):
	// its writer adds ids in ascending order, so it holds none after it.
	// Ids a writer has yet to add are those Lookup is asked about while
	// the period is built (collect.Dedupe looks an id up before it adds
	// it): they are answered without reading the generation.
	last []byte
}

// get returns the claim value of id in the run; ok is false when it has
// none.
func (p *probe) get(lists *bolt.Bucket, id []byte) (c claimValue, ok bool, err error) {
	if !p.opened {
		p.opened = true
		run := nested(lists.Bucket(p.start), genKey(p.gen))
		if run == nil {
			return c, false, nil
		}
		if p.filter == nil {
			if p.last, _ = run.Cursor().Last(); p.last == nil {
				return c, false, nil
			}
		}
		if p.list, err = newListReader(run, unsortable(p.start)); err != nil {
			return c, false, err
		}
	}
	if p.list == nil || (p.last != nil && bytes.Compare(id, p.last) > 0) {
		return c, false, nil
	}
	return p.list.get(id)
}

// jobRuns returns the level-0 runs Lookup reads (of the job whose
// lists, filters and writers buckets it is given), the latest period
// first and, within a period, the newest generation first: the first of
// them that holds a claim value for an id holds its latest level-0 claim.
// They are the committed runs with a filter (not merged yet) and the
// generations of writers that have not committed (running, or failed),
// read for every id up to their last (see probe).
func jobRuns(lists, filters, writers *bolt.Bucket) ([]probe, error) {
	if lists == nil {
		return nil, nil
	}
	var runs []probe
	for _, b := range []*bolt.Bucket{filters, writers} {
		if b == nil {
			continue
		}
		err := b.ForEach(func(k, v []byte) error {
			if len(k) != 16 {
				return fmt.Errorf("corrupt run key %x", k)
			}
			p := probe{start: k[:8], gen: binary.BigEndian.Uint64(k[8:])}
			if b == filters {
				if err := checkFilter(v); err != nil {
					return fmt.Errorf("generation %d of period %s: %w", p.gen, formatTime(time.UnixMilli(unsortable(p.start))), err)
				}
				p.filter = v
			}
			runs = append(runs, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(runs, func(a, b probe) int {
		if c := bytes.Compare(b.start, a.start); c != 0 {
			return c
		}
		return cmp.Compare(b.gen, a.gen)
	})
	return runs, nil
}

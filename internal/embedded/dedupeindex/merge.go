package dedupeindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Merged runs (size-tiered). A committed period's run (its list, with a
// filter) is a level-0 run. When a level holds mergeFanIn runs,
// NewClaimWriter (after the sweep, under the lease) merges the oldest
// mergeFanIn of them into one packed run (block.go) of the next level,
// dropping the entries no longer valid, then drops the inputs: a level-0
// run loses its filter (the list stays, for PeriodIDs and the period's
// next writer), a merged run goes whole. So a job has at most
// mergeFanIn-1 runs per level after NewClaimWriter (and the run of the
// period being written), and each claim is rewritten once per level it
// climbs. A merged run whose periods have all been swept is dropped whole.
//
//	periods / <job> / merged / <seq>        <last id of block> -> block
//	periods / <job> / mergedmeta            <seq> -> run meta and filter
//
// A merged bucket without meta is a merge cut short: the next merge
// deletes it. Lookup reads only runs with meta.

// mergeFanIn is how many runs of a level are merged into one of the next.
var mergeFanIn = 8

// maxMergedEntries bounds the merged runs made of merged runs (level 2
// and up): a merge's filter is built in memory (10 bits per entry: 40 MiB
// at this bound), so runs whose merge would hold more entries stay as
// they are (sealed) until they are swept. Level-0 runs (periods) are
// always merged, mergeFanIn at a time, so a look-up never reads more
// than mergeFanIn-1 runs of periods.
var maxMergedEntries uint64 = 1 << 25

var (
	bucketMerged     = []byte("merged")
	bucketMergedMeta = []byte("mergedmeta")
)

const (
	runMetaVersion = 1
	runMetaHeader  = 1 + 1 + 8 + 8 + 8
)

// runMeta describes a merged run: its level, how many entries it holds
// and the range of their period starts (ms), then its filter.
type runMeta struct {
	level    byte
	count    uint64
	min, max int64
	filter   []byte
}

func (m runMeta) encode() []byte {
	b := make([]byte, 0, runMetaHeader+len(m.filter))
	b = append(b, runMetaVersion, m.level)
	b = binary.BigEndian.AppendUint64(b, m.count)
	b = append(b, sortable(m.min)...)
	b = append(b, sortable(m.max)...)
	return append(b, m.filter...)
}

// decodeRunMeta decodes v; the filter is v's (mapped: read only).
func decodeRunMeta(v []byte) (runMeta, error) {
	if len(v) < runMetaHeader || v[0] != runMetaVersion {
		return runMeta{}, fmt.Errorf("corrupt merged run meta (%d bytes)", len(v))
	}
	m := runMeta{
		level: v[1], count: binary.BigEndian.Uint64(v[2:]),
		min: unsortable(v[10:18]), max: unsortable(v[18:26]), filter: v[runMetaHeader:],
	}
	if err := checkFilter(m.filter); err != nil {
		return runMeta{}, err
	}
	return m, nil
}

// validity is the rule, in one place, for an entry of a merged run: it
// counts only while its generation is its period's committed head. A
// rebuild of the period (a new generation) or its sweep (no head)
// invalidates it without rewriting the run. Generations are never reused
// within a job (NewClaimWriter), so an entry never becomes valid again.
type validity struct {
	heads *bolt.Bucket
	gens  map[int64]uint64 // period start (ms) -> head generation, 0: none
}

func newValidity(heads *bolt.Bucket) *validity {
	return &validity{heads: heads, gens: map[int64]uint64{}}
}

func (v *validity) valid(e *entry) (bool, error) {
	g, ok := v.gens[e.c.period]
	if !ok {
		if v.heads != nil {
			if hv := v.heads.Get(sortable(e.c.period)); hv != nil {
				h, err := decodeHead(hv)
				if err != nil {
					return false, err
				}
				g = h.gen
			}
		}
		v.gens[e.c.period] = g
	}
	return g != 0 && g == e.gen, nil
}

// anyHead reports whether heads has a period starting in [min, max].
func anyHead(heads *bolt.Bucket, min, max int64) bool {
	if heads == nil {
		return false
	}
	k, _ := heads.Cursor().Seek(sortable(min))
	return k != nil && len(k) == 8 && unsortable(k) <= max
}

// mergedProbe is a merged run Lookup reads.
type mergedProbe struct {
	seq  []byte
	meta runMeta
}

// jobMerged returns job's merged runs (those with meta), in merge order.
func jobMerged(tx *bolt.Tx, job string) ([]mergedProbe, error) {
	metas, _ := jobBucket(tx, job, bucketMergedMeta, false)
	return mergedRuns(metas)
}

// mergedRuns returns the merged runs of the job whose mergedmeta bucket
// is metas (nil: none).
func mergedRuns(metas *bolt.Bucket) ([]mergedProbe, error) {
	if metas == nil {
		return nil, nil
	}
	var out []mergedProbe
	err := metas.ForEach(func(k, v []byte) error {
		m, err := decodeRunMeta(v)
		if err != nil {
			return fmt.Errorf("merged run %x: %w", k, err)
		}
		out = append(out, mergedProbe{seq: k, meta: m})
		return nil
	})
	return out, err
}

// runRef names a merge input: a level-0 run (key: its filter key) or a
// merged run (seq).
type runRef struct {
	key, seq []byte
}

// merge merges job's runs until no level holds mergeFanIn of them, after
// deleting merges cut short and merged runs whose periods are all swept.
func (ix *Index) merge(ctx context.Context, job string) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("merge runs in %s: %w", ix.path, err)
		}
		var (
			inputs []runRef
			level  byte
			drop   [][]byte
		)
		err := ix.db.View(func(tx *bolt.Tx) error {
			heads, _, _, _ := jobPeriods(tx, job, false)
			merged, _ := jobBucket(tx, job, bucketMerged, false)
			metas, _ := jobBucket(tx, job, bucketMergedMeta, false)
			if merged != nil {
				_ = merged.ForEachBucket(func(k []byte) error {
					if metas == nil || metas.Get(k) == nil {
						drop = append(drop, bytes.Clone(k))
					}
					return nil
				})
			}
			runs, err := jobMerged(tx, job)
			if err != nil {
				return err
			}
			byLevel := map[byte][]runRef{}
			for _, r := range runs {
				if !anyHead(heads, r.meta.min, r.meta.max) {
					drop = append(drop, bytes.Clone(r.seq))
					continue
				}
				byLevel[r.meta.level] = append(byLevel[r.meta.level], runRef{seq: bytes.Clone(r.seq)})
			}
			if len(drop) > 0 {
				return nil
			}
			if filters, _ := jobBucket(tx, job, bucketFilters, false); filters != nil {
				c := filters.Cursor()
				for k, _ := c.First(); k != nil && len(byLevel[0]) < mergeFanIn; k, _ = c.Next() {
					byLevel[0] = append(byLevel[0], runRef{key: bytes.Clone(k)})
				}
			}
			for l := 0; l < 256; l++ {
				rs := byLevel[byte(l)]
				if len(rs) < mergeFanIn {
					continue
				}
				if l > 0 {
					n, err := runsCount(tx, job, rs[:mergeFanIn])
					if err != nil {
						return err
					}
					if n > maxMergedEntries {
						continue // sealed: see maxMergedEntries
					}
				}
				inputs, level = rs[:mergeFanIn], byte(l+1)
				return nil
			}
			return nil
		})
		if err == nil && len(drop) > 0 {
			err = ix.db.Update(func(tx *bolt.Tx) error { return dropMerged(tx, job, drop) })
		} else if err == nil && inputs != nil {
			err = ix.mergeRuns(ctx, job, inputs, level)
		}
		if err != nil {
			return fmt.Errorf("merge runs in %s: %w", ix.path, err)
		}
		if len(drop) == 0 && inputs == nil {
			return nil
		}
	}
}

// dropMerged deletes the merged runs seqs (bucket and meta).
func dropMerged(tx *bolt.Tx, job string, seqs [][]byte) error {
	merged, _ := jobBucket(tx, job, bucketMerged, false)
	metas, _ := jobBucket(tx, job, bucketMergedMeta, false)
	for _, s := range seqs {
		if metas != nil {
			if err := metas.Delete(s); err != nil {
				return err
			}
		}
		if merged != nil && merged.Bucket(s) != nil {
			if err := merged.DeleteBucket(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeRuns merges inputs into a new run of level: its blocks are written
// indexBatch entries per transaction into a bucket without meta (not read
// by Lookup; deleted by the next merge if this one is cut short), then one
// transaction writes its meta and filter and drops the inputs, so Lookup
// sees either the inputs or the merged run.
func (ix *Index) mergeRuns(ctx context.Context, job string, inputs []runRef, level byte) error {
	var (
		seq   []byte
		total uint64
	)
	err := ix.db.Update(func(tx *bolt.Tx) error {
		merged, err := jobBucket(tx, job, bucketMerged, true)
		if err != nil {
			return err
		}
		n, err := merged.NextSequence()
		if err != nil {
			return err
		}
		seq = genKey(n)
		if _, err := merged.CreateBucket(seq); err != nil {
			return err
		}
		total, err = runsCount(tx, job, inputs)
		return err
	})
	if err != nil {
		return err
	}
	f := newFilter(int(total))
	meta := runMeta{level: level}
	var last *entry
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		more := false
		err := ix.db.Update(func(tx *bolt.Tx) error {
			heads, _, lists, _ := jobPeriods(tx, job, false)
			merged, _ := jobBucket(tx, job, bucketMerged, false)
			metas, _ := jobBucket(tx, job, bucketMergedMeta, false)
			run := nested(merged, seq)
			if run == nil {
				return fmt.Errorf("merged run %x was deleted by another writer", seq)
			}
			srcs := make([]*source, 0, len(inputs))
			for _, in := range inputs {
				s, err := openSource(lists, merged, metas, in, last)
				if err != nil {
					return err
				}
				srcs = append(srcs, s)
			}
			val := newValidity(heads)
			bw := blockWriter{run: run}
			emitted := 0
			for {
				s, err := minSource(srcs)
				if err != nil {
					return err
				}
				if s == nil {
					break
				}
				e := s.cur
				if emitted >= indexBatch && last != nil && !bytes.Equal(e.id, last.id) {
					more = true
					break
				}
				if err := s.advance(); err != nil {
					return err
				}
				ok, err := val.valid(&e)
				if err != nil {
					return err
				}
				cp := e
				last = &cp
				emitted++
				if !ok {
					continue
				}
				if err := bw.add(e); err != nil {
					return err
				}
				f.add(idHash(e.id))
				if meta.count == 0 || e.c.period < meta.min {
					meta.min = e.c.period
				}
				if meta.count == 0 || e.c.period > meta.max {
					meta.max = e.c.period
				}
				meta.count++
			}
			return bw.flush()
		})
		if err != nil {
			return fmt.Errorf("merge into run %x (level %d): %w", seq, level, err)
		}
		if !more {
			break
		}
	}
	meta.filter = f.bytes()
	err = ix.db.Update(func(tx *bolt.Tx) error {
		var drop [][]byte
		for _, in := range inputs {
			if in.seq != nil {
				drop = append(drop, in.seq)
			}
		}
		if meta.count == 0 {
			drop = append(drop, seq)
		} else {
			metas, err := jobBucket(tx, job, bucketMergedMeta, true)
			if err != nil {
				return err
			}
			if err := metas.Put(seq, meta.encode()); err != nil {
				return err
			}
		}
		filters, _ := jobBucket(tx, job, bucketFilters, false)
		for _, in := range inputs {
			if in.key != nil && filters != nil {
				if err := filters.Delete(in.key); err != nil {
					return err
				}
			}
		}
		return dropMerged(tx, job, drop)
	})
	if err != nil {
		return fmt.Errorf("merge into run %x (level %d): %w", seq, level, err)
	}
	return nil
}

// runsCount returns how many entries runs hold: a level-0 run's head
// count, a merged run's meta count.
func runsCount(tx *bolt.Tx, job string, runs []runRef) (uint64, error) {
	heads, _, _, _ := jobPeriods(tx, job, false)
	metas, _ := jobBucket(tx, job, bucketMergedMeta, false)
	var total uint64
	for _, in := range runs {
		if in.key != nil {
			if v := heads.Get(in.key[:8]); v != nil {
				h, err := decodeHead(v)
				if err != nil {
					return 0, err
				}
				total += h.count
			}
			continue
		}
		m, err := decodeRunMeta(metas.Get(in.seq))
		if err != nil {
			return 0, err
		}
		total += m.count
	}
	return total, nil
}

// lookupMerged returns the claim of id in job's merged runs: among the
// first valid entry of each run that may hold it (its latest period
// there), the latest period's. Runs holding only periods at or before
// after (a claim found already) are skipped.
func lookupMerged(merged *bolt.Bucket, runs []mergedProbe, val *validity, id []byte, h uint64, after int64) (entry, bool, error) {
	var (
		best  entry
		found bool
	)
	for i := range runs {
		r := &runs[i]
		if r.meta.max <= after || (found && r.meta.max <= best.c.period) || !mayHold(r.meta.filter, h) {
			continue
		}
		b := nested(merged, r.seq)
		if b == nil {
			return best, false, fmt.Errorf("merged run %x is missing", r.seq)
		}
		es, err := runEntries(b, id, nil)
		if err != nil {
			return best, false, fmt.Errorf("merged run %x: %w", r.seq, err)
		}
		for j := range es {
			ok, err := val.valid(&es[j])
			if err != nil {
				return best, false, err
			}
			if ok {
				if !found || es[j].c.period > best.c.period {
					best, found = es[j], true
				}
				break
			}
		}
	}
	return best, found, nil
}

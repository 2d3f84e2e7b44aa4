package dedupeindex

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
)

// NewClaimWriter implements collect.Index. It first sweeps the job's lists
// whose expiry is at or before sweepAt, with the claims that still point to
// their periods (see sweep), then creates the new generation's bucket.
func (ix *Index) NewClaimWriter(ctx context.Context, job string, p report.Period, expires, sweepAt time.Time) (collect.ClaimWriter, error) {
	period := p.Start
	if err := collect.CheckJob(job); err != nil {
		return nil, fmt.Errorf("new claim writer: %w", err)
	}
	switch {
	case period.IsZero():
		return nil, fmt.Errorf("new claim writer of job %q: period start is zero", job)
	case !p.End.After(period):
		return nil, fmt.Errorf("new claim writer of job %q: period end %s is not after its start %s",
			job, formatTime(p.End), formatTime(period))
	case !expires.After(period):
		return nil, fmt.Errorf("new claim writer of job %q: expires %s is not after the period start %s",
			job, formatTime(expires), formatTime(period))
	}
	if err := ix.sweep(ctx, job, sweepAt); err != nil {
		return nil, fmt.Errorf("new claim writer of job %q: %w", job, err)
	}
	if err := ix.merge(ctx, job); err != nil {
		return nil, fmt.Errorf("new claim writer of job %q: %w", job, err)
	}
	w := &claimWriter{
		ix: ix, ctx: ctx, job: job, period: period.UTC(),
		start:   sortable(period.UnixMilli()),
		claim:   claimValue{period: period.UnixMilli(), end: p.End.UnixMilli(), expires: expires.Unix()},
		expires: expires.Unix(),
	}
	err := ix.db.Update(func(tx *bolt.Tx) error {
		if ix.mark != nil {
			if err := ix.mark(tx); err != nil {
				return err
			}
		}
		heads, _, lists, err := jobPeriods(tx, job, true)
		if err != nil {
			return err
		}
		if v := heads.Get(w.start); v != nil {
			h, err := decodeHead(v)
			if err != nil {
				return err
			}
			w.old, w.hadOld = h, true
		}
		gens, err := lists.CreateBucketIfNotExists(w.start)
		if err != nil {
			return err
		}
		// Past every generation, also those of writers that never
		// committed: their lists are Previous's to read, and go at this
		// writer's Commit.
		w.gen = w.old.gen + 1
		err = gens.ForEachBucket(func(k []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("corrupt generation key %x", k)
			}
			g := binary.BigEndian.Uint64(k)
			w.gen = max(w.gen, g+1)
			if !w.hadOld || g != w.old.gen {
				w.failed = append(w.failed, g)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Generations are never reused within the job (a period swept
		// then written again included): entries of merged runs name them
		// (see validity).
		jb := tx.Bucket(bucketPeriods).Bucket([]byte(job))
		if v := jb.Get(keyLastGen); len(v) == 8 {
			w.gen = max(w.gen, binary.BigEndian.Uint64(v)+1)
		}
		if err := jb.Put(keyLastGen, genKey(w.gen)); err != nil {
			return err
		}
		w.older = append(slices.Clone(w.failed), w.old.gen)
		if !w.hadOld {
			w.older = w.older[:len(w.failed)]
		}
		slices.Sort(w.older)
		slices.Reverse(w.older)
		run, err := gens.CreateBucket(genKey(w.gen))
		if err != nil {
			return err
		}
		// The list is packed (l0block.go); the store's format, which
		// mark records in this transaction, tells a binary from before
		// packed lists to refuse the file.
		if err := run.SetSequence(layoutPacked); err != nil {
			return err
		}
		writers, err := jobBucket(tx, job, bucketWriters, true)
		if err != nil {
			return err
		}
		return writers.Put(runKey(w.start, w.gen), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("new claim writer of job %q period %s in %s: %w", job, formatTime(period), ix.path, err)
	}
	return w, nil
}

// claimWriter is the embedded collect.ClaimWriter. It buffers up to
// indexBatch adds and releases and writes them in one transaction, in the
// background: the caller goes on filling the next batch meanwhile (at most
// one batch is being written). A batch writes whole blocks of its packed
// list (l0block.go): the adds past the last whole block stay buffered for
// the next batch, except at Commit. A failed write is reported by the next
// Add, Release or Commit. Each id goes into the writer's generation bucket
// in the transaction that writes its claim (its claim is its entry there),
// so a writer that never commits leaves every claim it wrote listed there,
// for the next writer's Previous.
type claimWriter struct {
	ix      *Index
	ctx     context.Context
	job     string
	period  time.Time
	start   []byte
	claim   claimValue // period and expiry of the claims written
	expires int64
	old     headValue
	hadOld  bool
	gen     uint64
	// failed are the generations of writers that started before this one
	// and never committed, when it started.
	failed []uint64
	// older are the period's generations when it started, newest first:
	// where the claims of ids added without write are carried from.
	older []uint64
	count uint64
	// claims is how many of the ids written have a claim value (the
	// size of the list's filter).
	claims int
	// filter, after Expect, is the list's filter, sized for expected
	// ids, filled as the batches are written (by their goroutine, one at
	// a time): Commit stores it instead of reading the list again, unless
	// more claims came than expected.
	filter   *filterBuilder
	expected int64
	last     string
	adds     []pendingAdd
	rels     []string
	err      error // sticky: the first failure
	done     bool
	// writing receives the outcome of the batch being written, nil when
	// none is.
	writing chan writeResult
	// written is the adds of the batch being written; once it is, their
	// memory takes the next batch's (spare).
	written, spare []pendingAdd
}

type writeResult struct {
	claims int
	err    error
}

type pendingAdd struct {
	id    string
	fp    [collect.FPLen]byte
	write bool
}

func (w *claimWriter) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("claim writer of job %q period %s: %w", w.job, formatTime(w.period), err)
	}
	return w.err
}

func (w *claimWriter) usable() error {
	if w.done {
		return fmt.Errorf("claim writer of job %q period %s: already committed or aborted", w.job, formatTime(w.period))
	}
	return w.err
}

// Add implements collect.ClaimWriter.
func (w *claimWriter) Add(id string, fp [collect.FPLen]byte, write bool) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := collect.CheckID(id); err != nil {
		return w.fail(err)
	}
	if w.count > 0 && id <= w.last {
		return w.fail(fmt.Errorf("Add(%q) after Add(%q): ids must be strictly ascending", clip(id), clip(w.last)))
	}
	w.last = id
	w.count++
	w.adds = append(w.adds, pendingAdd{id, fp, write})
	if len(w.adds)+len(w.rels) >= indexBatch {
		return w.flushBlocks()
	}
	return nil
}

// Expect implements collect.ExpectingClaimWriter: the filter is built as
// the claims are written. It is ignored after the first Add.
func (w *claimWriter) Expect(ids int64) {
	if w.count > 0 || w.writing != nil || ids <= 0 {
		return
	}
	w.filter, w.expected = newFilter(int(ids)), ids
}

// Release implements collect.ClaimWriter.
func (w *claimWriter) Release(id string) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := collect.CheckID(id); err != nil {
		return w.fail(err)
	}
	w.rels = append(w.rels, id)
	if len(w.adds)+len(w.rels) >= indexBatch {
		return w.flushBlocks()
	}
	return nil
}

// flush starts writing the buffered adds and releases, after the batch
// being written, if any, is done.
func (w *claimWriter) flush() error { return w.startWrite(true) }

// flushBlocks is flush, but the adds past the last whole block stay
// buffered (when there is a whole block).
func (w *claimWriter) flushBlocks() error { return w.startWrite(false) }

func (w *claimWriter) startWrite(last bool) error {
	if err := w.wait(); err != nil {
		return err
	}
	if len(w.adds) == 0 && len(w.rels) == 0 {
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		return w.fail(err)
	}
	adds, rels := w.adds, w.rels
	keep := 0
	if !last && len(adds) > blockEntries {
		keep = len(adds) % blockEntries
	}
	next := w.spare
	if cap(next) < cap(adds) {
		next = make([]pendingAdd, 0, cap(adds))
	}
	w.adds, w.spare = append(next[:0], adds[len(adds)-keep:]...), nil
	adds = adds[:len(adds)-keep]
	w.written = adds
	w.rels = make([]string, 0, cap(rels))
	done := make(chan writeResult, 1)
	w.writing = done
	go func() {
		n, err := w.write(adds, rels)
		done <- writeResult{n, err}
	}()
	return nil
}

// wait waits for the batch being written, if any, and returns the
// writer's sticky error.
func (w *claimWriter) wait() error {
	if w.writing != nil {
		r := <-w.writing
		w.writing = nil
		clear(w.written) // its ids: their memory is the batches' (item.Strings)
		w.spare, w.written = w.written[:0], nil
		if r.err != nil {
			return w.fail(fmt.Errorf("%s: %w", w.ix.path, r.err))
		}
		w.claims += r.claims
	}
	return w.err
}

// write writes adds in one transaction, into blocks of the writer's run
// (its generation bucket, packed): each id with its claim value, written
// or carried over (see carried), or with none. It returns how many have
// a claim value. A release writes nothing: the claim released is in an
// older generation of the period, which goes at Commit, and in merged
// runs as an entry of that generation, which the Commit invalidates (see
// validity).
func (w *claimWriter) write(adds []pendingAdd, _ []string) (int, error) {
	claims := 0
	err := w.ix.db.Update(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, w.job, false)
		gens := nested(lists, w.start)
		run := nested(gens, genKey(w.gen))
		if run == nil {
			return fmt.Errorf("generation %d of the list was deleted by another writer", w.gen)
		}
		older := make([]*listReader, 0, len(w.older))
		for _, g := range w.older {
			if b := gens.Bucket(genKey(g)); b != nil {
				r, err := newListReader(b, w.claim.period)
				if err != nil {
					return fmt.Errorf("generation %d: %w", g, err)
				}
				older = append(older, r)
			}
		}
		pk := newL0Packer(run, w.claim.period)
		for _, a := range adds {
			c := w.claim
			ok := a.write
			if ok {
				c.fp = a.fp
			} else {
				var err error
				if c, ok, err = carried(older, []byte(a.id)); err != nil {
					return err
				}
			}
			cp := &c
			if !ok {
				cp = nil
			} else {
				claims++
				if w.filter != nil {
					w.filter.add(idHash(a.id))
				}
			}
			if err := pk.add(a.id, cp); err != nil {
				return err
			}
		}
		return pk.flush()
	})
	return claims, err
}

// carried returns the claim value that an id added without write keeps:
// the period's own, from the newest older generation of the period that
// wrote one; ok is false when the period has none (the id's claim, if
// any, is another period's).
func carried(older []*listReader, id []byte) (c claimValue, ok bool, err error) {
	for _, r := range older {
		if c, ok, err = r.get(id); err != nil || ok {
			return c, ok, err
		}
	}
	return c, false, nil
}

// Commit implements collect.ClaimWriter: after the last batch, one
// transaction checks that the head is still the one NewClaimWriter read (or
// was swept since), points it at the new generation, updates the expiry
// bucket and deletes every other generation of the period.
func (w *claimWriter) Commit() error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.wait(); err != nil {
		return err
	}
	w.done = true
	err := w.ix.db.Update(func(tx *bolt.Tx) error {
		heads, expiry, lists, err := jobPeriods(tx, w.job, true)
		if err != nil {
			return err
		}
		if v := heads.Get(w.start); v != nil {
			cur, err := decodeHead(v)
			if err != nil {
				return err
			}
			if !w.hadOld || cur.gen != w.old.gen {
				return fmt.Errorf("another writer replaced the list (now generation %d, want %d)", cur.gen, w.old.gen)
			}
			if err := expiry.Delete(append(sortable(cur.expires), w.start...)); err != nil {
				return err
			}
		}
		gens := lists.Bucket(w.start)
		if gens == nil || gens.Bucket(genKey(w.gen)) == nil {
			return fmt.Errorf("generation %d of the list was deleted by another writer", w.gen)
		}
		h := headValue{gen: w.gen, count: w.count, expires: w.expires}
		if err := heads.Put(w.start, h.encode()); err != nil {
			return err
		}
		if err := expiry.Put(append(sortable(w.expires), w.start...), nil); err != nil {
			return err
		}
		filters, err := jobBucket(tx, w.job, bucketFilters, true)
		if err != nil {
			return err
		}
		var f []byte
		if w.filter != nil && int64(w.claims) <= w.expected {
			f = w.filter.bytes()
		} else if f, err = packedFilter(gens.Bucket(genKey(w.gen)), w.claims); err != nil {
			return fmt.Errorf("generation %d: %w", w.gen, err)
		}
		if err := filters.Put(runKey(w.start, w.gen), f); err != nil {
			return err
		}
		if err := deleteRunKeys(filters, w.start, w.gen); err != nil {
			return err
		}
		writers, _ := jobBucket(tx, w.job, bucketWriters, false)
		if err := deleteRunKeys(writers, w.start, w.gen+1); err != nil {
			return err
		}
		return deleteGensBefore(gens, w.gen)
	})
	if err != nil {
		return w.fail(fmt.Errorf("commit in %s: %w", w.ix.path, err))
	}
	return nil
}

// deleteGensBefore deletes the generation buckets of gens below gen: the
// list replaced and those of the failed writers whose ids the committing
// writer read (Previous) and released. A later generation (a writer that
// started after it: the lease should prevent that) stays, for the writer
// after.
func deleteGensBefore(gens *bolt.Bucket, gen uint64) error {
	var del [][]byte
	err := gens.ForEachBucket(func(k []byte) error {
		if len(k) == 8 && binary.BigEndian.Uint64(k) < gen {
			del = append(del, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range del {
		if err := gens.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// Abort implements collect.ClaimWriter: it drops what is buffered. Claims
// already written stay (see collect.ClaimWriter), and so does the
// generation bucket that lists their ids, for the next writer's Previous;
// an empty one is deleted (best effort). It does nothing after Commit or
// Abort.
func (w *claimWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.writing != nil {
		<-w.writing // its claims stay, as those written before
		w.writing = nil
	}
	w.adds, w.rels = nil, nil
	_ = w.ix.db.Update(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, w.job, false)
		gens := nested(lists, w.start)
		if b := nested(gens, genKey(w.gen)); b != nil {
			if k, _ := b.Cursor().First(); k == nil {
				if writers, _ := jobBucket(tx, w.job, bucketWriters, false); writers != nil {
					if err := writers.Delete(runKey(w.start, w.gen)); err != nil {
						return err
					}
				}
				return gens.DeleteBucket(genKey(w.gen))
			}
		}
		return nil
	})
}

package collect

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/item"
)

// DedupeOptions say how Dedupe treats transactions other periods billed.
type DedupeOptions struct {
	// Job names the job in the index.
	Job string
	// Index is the dedupe index; nil dedupes within the period only
	// (report.dedupe_window 0).
	Index Index
	// Window is report.dedupe_window, the one in force now: it decides
	// which claims count (Claim.Counts), and how long the claims the
	// period writes are kept (ClaimRetention).
	Window time.Duration
	// Write makes Dedupe record the period's claims (a run, a restatement,
	// a backfill); false only looks (a dry run).
	Write bool
	// Fence is called before the claims are started and before they are
	// committed: a non-nil error (the lease is lost) stops Dedupe with it.
	Fence func() error
	// Wall is the wall clock at the start of the run (the lease's clock,
	// not --now): on a WallClockIndex, claims are also kept
	// ClaimRetention after it. Zero: the report clock alone.
	Wall time.Time
	// Now is the report clock. Claims expired before both it and the
	// period's start may be swept: a report clock ahead of real time
	// (--now, a host clock ahead) never sweeps claims that still count
	// for the periods being built.
	Now time.Time
	// Previous is what the period's current revision decided, for a
	// rebuild (nil: the period was never delivered, or its revision does
	// not record its decisions). Every decision it gives is kept, whatever
	// the index holds now: billed (whatever period claimed the id since),
	// dropped as a copy of the period that billed it, rejected. The index
	// decides only about the transactions it gives no decision for.
	Previous Previous
	// Record writes the period's cross-period decisions (the copies it
	// drops or rejects because another period billed them) into the
	// duplicates file (Stats.DuplicatesFile).
	Record bool
}

// Stats are what Dedupe decided.
type Stats struct {
	// Transactions billed by the period.
	Transactions int64
	// DuplicatesWithinPeriod: identical copies of a transaction billed
	// once here. DuplicatesAcrossPeriods: identical copies of a transaction
	// another period billed.
	DuplicatesWithinPeriod, DuplicatesAcrossPeriods int64
	// Rejects: validation rejects, conflicting copies within the period,
	// and copies that differ from what another period billed.
	Rejects int64
	// RejectsFile is the joined rejects file (JSON Lines) in the scratch
	// folder, "" when there are none.
	RejectsFile string
	// DuplicatesFile is the duplicates file (JSON Lines of CrossPeriod) in
	// the scratch folder, with DuplicatesLines lines: "" when the period
	// dropped or rejected no copy because of another period, or without
	// DedupeOptions.Record.
	DuplicatesFile  string
	DuplicatesLines int64
}

// Reasons of the rejects Dedupe adds.
const (
	reasonConflict    = "conflicting duplicate: %d items carry this transaction_id with different content"
	reasonBilledOther = "transaction_id already billed in period %s with different content"
)

// Dedupe merges the transactions by id and calls emit with each billed
// one, in ascending transaction id order. Identical copies within the
// period are billed once (the copy with the smallest keys); copies with
// different content are all rejected. A transaction another period billed
// within the window is dropped when identical, rejected when not: every
// transaction stays in the period that billed it first, also when a later
// period is rebuilt. With o.Write, the claims of the period are recorded
// before Dedupe returns, and those it no longer bills are released. emit
// must not keep tx. Dedupe may be called once.
func (c *Collected) Dedupe(ctx context.Context, o DedupeOptions, emit func(tx *item.Transaction) error) (Stats, error) {
	var st Stats
	conflicts := &rejectLog{dir: c.cfg.Dir}
	defer conflicts.finish()
	it, err := c.sorted.Sort()
	if err != nil {
		return st, fmt.Errorf("sort by transaction id: %w", err)
	}
	d := &deduper{c: c, o: o, st: &st, emit: emit, conflicts: conflicts}
	if o.Record {
		d.crossPeriod = newCrossPeriodLog(c.cfg.Dir)
		defer d.crossPeriod.finish()
	}
	if o.Index != nil && o.Write {
		if err := d.startClaims(ctx); err != nil {
			return st, err
		}
		defer d.abortClaims()
	}
	if err := d.run(ctx, it); err != nil {
		return st, err
	}
	if f, ok := o.Previous.(interface{ Finish() error }); ok {
		if err := f.Finish(); err != nil {
			return st, fmt.Errorf("read the current revision's duplicates: %w", err)
		}
	}
	if d.cw != nil {
		for _, l := range c.rejects {
			for _, id := range l.ids {
				d.sight(id, SightingRejected)
				if err := d.flushSightings(ctx, false); err != nil {
					return st, err
				}
			}
		}
		if err := d.finishClaims(ctx); err != nil {
			return st, err
		}
	}
	// The sorted records are consumed: free their buffer and run files now
	// rather than when the caller closes c, after encoding the period. (A
	// file that cannot be removed goes with the scratch folder.)
	_ = c.sorted.Close()
	logs := append(append([]*rejectLog{}, c.rejects...), conflicts)
	n, err := joinRejects(c.rejectsPath(), logs)
	if err != nil {
		return st, err
	}
	st.Rejects = n
	if n > 0 {
		st.RejectsFile = c.rejectsPath()
	}
	if st.DuplicatesFile, st.DuplicatesLines, err = d.crossPeriod.finish(); err != nil {
		return st, err
	}
	return st, nil
}

// deduper decides the groups of id-sorted records that a grouper reads
// (see pipeline.go) and records the period's claims.
type deduper struct {
	c         *Collected
	o         DedupeOptions
	st        *Stats
	emit      func(*item.Transaction) error
	conflicts *rejectLog
	// crossPeriod is the duplicates file (nil without DedupeOptions.Record).
	crossPeriod *crossPeriodLog

	// Claims of the period being written.
	cw       ClaimWriter
	oldIDs   func() (string, error, bool)
	stopOld  func()
	oldNext  string
	oldValid bool

	// sightings are the copies of transactions the period saw and did
	// not bill (SightingIndex), recorded before the claims commit: in
	// batches of sightingBatch as the walk goes (flushSightings), the
	// rest at the end.
	sightings []Sighting
}

// sight records that the period did not bill a copy of id.
func (d *deduper) sight(id, kind string) {
	if _, ok := d.o.Index.(SightingIndex); !ok || !d.o.Write {
		return
	}
	p := d.c.Period
	s := Sighting{ID: id, Period: p.Start, Kind: kind, Expires: d.expiry()}
	if n := len(d.sightings); n > 0 && d.sightings[n-1] == s {
		return
	}
	// Kept until the claims commit: a copy, not a string of the batch's
	// memory (which it would keep whole).
	s.ID = strings.Clone(id)
	d.sightings = append(d.sightings, s)
}

// candidate is a transaction billed once within the period, waiting to be
// checked against the index.
type candidate struct {
	tx item.Transaction
	fp [FPLen]byte
}

// run decides every group of it, in transaction id order. A grouper
// goroutine merges and groups the records; batches of them are decoded
// and their claims looked up ahead, a few at a time, while this one
// decides, records the claims and emits: the work runs on every core.
func (d *deduper) run(ctx context.Context, it recordIterator) error {
	ctx, cancel := context.WithCancel(ctx)
	g := startGrouper(ctx, it, d.o.Index, d.o.Job, max(d.c.cfg.Concurrency, 1))
	defer func() {
		cancel()
		g.wait()
	}()
	for b := range g.out {
		<-b.ready // a lookup ends when its context does
		if b.err != nil {
			return b.err
		}
		if err := d.decide(b); err != nil {
			return err
		}
		g.recycle(b)
		if err := d.flushSightings(ctx, false); err != nil {
			return err
		}
	}
	return g.err
}

// decide bills, drops or rejects each entry of b, in order.
func (d *deduper) decide(b *batch) error {
	p := d.c.Period
	for i := range b.entries {
		e := &b.entries[i]
		if e.conflict != nil {
			for _, r := range e.conflict {
				var tx item.Transaction
				if err := decodeRecord(r.key, r.value, &tx, nil); err != nil {
					return fmt.Errorf("sort by transaction id: %w", err)
				}
				r := newReject(tx.Item(), item.AttrTransactionID, tx.ID, fmt.Sprintf(reasonConflict, len(e.conflict)))
				if err := d.conflicts.add(r); err != nil {
					return err
				}
				d.sight(tx.ID, SightingRejected)
			}
			continue
		}
		d.st.DuplicatesWithinPeriod += int64(e.dups)
		cand := &e.cand
		var kept Decision
		if d.o.Previous != nil {
			var err error
			if kept, err = d.o.Previous.Decision(cand.tx.ID, cand.fp); err != nil {
				return fmt.Errorf("read the current revision's decisions: %w", err)
			}
		}
		if kept.Kind == SightingDropped || kept.Kind == SightingRejected {
			// Decided by the revision being rebuilt: kept, whether or
			// not the index still holds the claim it was decided by.
			if err := d.notBilled(cand, kept.Kind, kept.BilledBy); err != nil {
				return err
			}
			continue
		}
		if d.o.Index == nil {
			if err := d.bill(cand, false); err != nil {
				return err
			}
			continue
		}
		cl, ok := b.claims[cand.tx.ID]
		var err error
		switch {
		case !ok:
			err = d.bill(cand, true)
		case cl.Period.Equal(p.Start):
			// Our own claim (a rerun, a restatement): rewritten only
			// when the content changed.
			err = d.bill(cand, cl.FP != cand.fp)
		case !cl.Counts(p, d.o.Window):
			// Billed by a period outside the window: billed here too.
			// The claim moves here only from an earlier period, so
			// that it names the latest billing and a rebuild of an
			// earlier period never takes it back.
			err = d.bill(cand, cl.Period.Before(p.Start))
		case kept.Kind == DecisionBilled:
			// The revision being rebuilt billed it: it stays billed
			// (another period billed it too once this period's claim
			// was gone), and the claim stays that period's.
			err = d.bill(cand, false)
		case cl.FP == cand.fp:
			err = d.notBilled(cand, SightingDropped, cl.Period)
		default:
			err = d.notBilled(cand, SightingRejected, cl.Period)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// notBilled drops cand (SightingDropped: an identical copy of what the
// period starting at billedBy billed) or rejects it (SightingRejected:
// different content), and records the decision.
func (d *deduper) notBilled(cand *candidate, decision string, billedBy time.Time) error {
	if decision == SightingDropped {
		d.st.DuplicatesAcrossPeriods++
	} else {
		name := billedBy.UTC().Format(periodNameLayout)
		r := newReject(cand.tx.Item(), item.AttrTransactionID, cand.tx.ID, fmt.Sprintf(reasonBilledOther, name))
		if err := d.conflicts.add(r); err != nil {
			return err
		}
	}
	d.sight(cand.tx.ID, decision)
	if d.crossPeriod != nil {
		return d.crossPeriod.add(cand, decision, billedBy)
	}
	return nil
}

// bill emits a billed transaction and records its claim.
func (d *deduper) bill(cand *candidate, write bool) error {
	d.st.Transactions++
	if d.cw != nil {
		// Each claim is checked: a run stopped in the middle of the
		// period's claims must write no more of them once its lease may
		// have expired (the index is not fenced by the lease in the store).
		if err := d.fence(); err != nil {
			return err
		}
		if err := d.releaseBefore(cand.tx.ID); err != nil {
			return err
		}
		if err := d.cw.Add(cand.tx.ID, cand.fp, write); err != nil {
			return fmt.Errorf("write the dedupe index: %w", err)
		}
	}
	return d.emit(&cand.tx)
}

// fence returns the error of the Fence option, nil without one.
func (d *deduper) fence() error {
	if d.o.Fence == nil {
		return nil
	}
	return d.o.Fence()
}

func (d *deduper) startClaims(ctx context.Context) error {
	if err := d.fence(); err != nil {
		return err
	}
	p := d.c.Period
	cw, err := d.o.Index.NewClaimWriter(ctx, d.o.Job, p, d.expiry(), d.sweep())
	if err != nil {
		return fmt.Errorf("write the dedupe index: %w", err)
	}
	d.cw = cw
	if ec, ok := cw.(ExpectingClaimWriter); ok {
		ec.Expect(d.c.valid) // it bills at most the valid transactions
	}
	next, stop := iter.Pull2(cw.Previous())
	d.oldIDs, d.stopOld = next, stop
	return d.advanceOld()
}

// expiry is when the claims and sightings the period writes expire:
// ClaimRetention after the period's end, or after the report clock when
// that is later. A backfill of history writes its claims long after their
// periods ended; kept from the period's end, they would be expired at once
// (DynamoDB's Time to Live goes by the wall clock and deletes them within
// days) while the backfill's later periods, within the window of them,
// still need them.
//
// On a WallClockIndex (DynamoDB), it is also at least ClaimRetention after
// the wall clock: a report clock in the past (`run --now`) would otherwise
// write claims that the store's Time to Live deletes at once.
func (d *deduper) expiry() time.Time {
	from := d.c.Period.End
	if d.o.Now.After(from) {
		from = d.o.Now
	}
	if _, ok := d.o.Index.(WallClockIndex); ok && d.o.Wall.After(from) {
		from = d.o.Wall
	}
	return from.Add(ClaimRetention(d.o.Window))
}

// sweep is the time up to which the store may sweep expired claims: the
// start of the period being built, or the report clock when that is
// earlier (a backfill of periods to come); never a clock ahead.
func (d *deduper) sweep() time.Time {
	sweep := d.c.Period.Start
	if !d.o.Now.IsZero() && d.o.Now.Before(sweep) {
		sweep = d.o.Now
	}
	return sweep
}

func (d *deduper) advanceOld() error {
	id, err, ok := d.oldIDs()
	if err != nil {
		return fmt.Errorf("read the period's previous claims: %w", err)
	}
	d.oldNext, d.oldValid = id, ok
	return nil
}

// releaseBefore releases the previous claims of the period (committed or
// left by a failed run: ClaimWriter.Previous) with an id below id (ids it
// no longer bills) and skips id itself.
func (d *deduper) releaseBefore(id string) error {
	for d.oldValid && d.oldNext <= id {
		if d.oldNext < id {
			if err := d.cw.Release(d.oldNext); err != nil {
				return fmt.Errorf("write the dedupe index: %w", err)
			}
		}
		if err := d.advanceOld(); err != nil {
			return err
		}
	}
	return nil
}

func (d *deduper) finishClaims(ctx context.Context) error {
	for d.oldValid {
		if err := d.fence(); err != nil {
			return err
		}
		if err := d.cw.Release(d.oldNext); err != nil {
			return fmt.Errorf("write the dedupe index: %w", err)
		}
		if err := d.advanceOld(); err != nil {
			return err
		}
	}
	if err := d.fence(); err != nil {
		return err
	}
	if err := d.flushSightings(ctx, true); err != nil {
		return err
	}
	err := d.cw.Commit()
	d.cw = nil
	d.stopOld()
	if err != nil {
		return fmt.Errorf("write the dedupe index: %w", err)
	}
	crashpoint.Hit(crashpoint.AfterClaims)
	return nil
}

// sightingBatch is how many sightings Dedupe holds before it records
// them: a period of millions of copies that other periods billed (a
// producer's replay) records them as it goes, in memory bounded by this,
// and in write transactions of this size.
const sightingBatch = 10_000

// flushSightings records the sightings held, when they are sightingBatch
// or more, or all of them: fenced before and after, as the claims are.
func (d *deduper) flushSightings(ctx context.Context, all bool) error {
	si, ok := d.o.Index.(SightingIndex)
	if !ok || len(d.sightings) == 0 || (!all && len(d.sightings) < sightingBatch) {
		return nil
	}
	if err := d.fence(); err != nil {
		return err
	}
	// One period, one expiry: a sighting is its (id, kind).
	slices.SortFunc(d.sightings, func(a, b Sighting) int { return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Kind, b.Kind)) })
	d.sightings = slices.CompactFunc(d.sightings, func(a, b Sighting) bool { return a.ID == b.ID && a.Kind == b.Kind })
	if err := si.RecordSightings(ctx, d.o.Job, d.sightings, d.sweep()); err != nil {
		return fmt.Errorf("write the dedupe index: sightings: %w", err)
	}
	clear(d.sightings)
	d.sightings = d.sightings[:0]
	return d.fence()
}

func (d *deduper) abortClaims() {
	if d.cw != nil {
		d.cw.Abort()
		d.cw = nil
	}
	if d.stopOld != nil {
		d.stopOld()
	}
}

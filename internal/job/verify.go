package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
)

// Statuses of a verified period.
const (
	VerifyOK           = "ok"
	VerifyItemsChanged = "items changed" // late items, or items changed since delivery
	VerifyObjects      = "objects differ"
	VerifyNoManifest   = "no manifest"
	VerifyNotDelivered = "not delivered yet" // after the checkpoint: not a difference
)

// VerifyOptions select what verify checks.
type VerifyOptions struct {
	From, To time.Time
	// Repair restates what differs and removes unlisted objects (takes the
	// lease).
	Repair bool
	// Last, instead of From and To: the periods that ended within Last
	// before Now - lateness (at least the last one).
	Last time.Duration
	// Reprice (with Repair) re-prices every delivered period of the range
	// with today's rates, on purpose: a period whose prices change is
	// published as a new revision (reason report.ReasonReprice).
	Reprice bool
	// Now is the report clock.
	Now time.Time
	// Progress, when set, is called before each period.
	Progress func(i, n int, p report.Period)
	// Months, when set, is called with the checks of the statements of
	// the months the range touches (after the periods').
	Months func([]monthclose.MonthCheck)
	// Range, when set, is called with the range's periods once they are
	// known (--last works them out).
	Range func([]report.Period)
	// Stop, when closed, ends Verify cleanly before the next period: the
	// periods checked (and repaired) are returned, the statements are
	// neither checked nor brought up to date (the next run or verify
	// --repair takes the repairs in).
	Stop <-chan struct{}
}

// PeriodCheck is verify's finding for one period.
type PeriodCheck struct {
	Period   report.Period
	Status   string
	Revision int
	// ItemsManifest and ItemsNow are the manifest's items_read and a
	// fresh read's count.
	ItemsManifest, ItemsNow int64
	Problems                []publish.Problem
	// Differs is true when the period counts as a difference (exit 4).
	Differs bool
	// Repaired is set by --repair: what it did.
	Repaired string
	// NotRepairable is set by --repair instead of Repaired when the period
	// cannot be repaired without losing part of its billing record: why,
	// and what was kept. The period still differs.
	NotRepairable string
}

// Verify checks each period in [From, To) against its manifest: it
// re-reads the items and compares their fingerprint, reads every listed
// object and checks its size and SHA-256, and looks for objects the
// manifest does not list. With Repair it then restates periods whose items
// or objects differ, publishes a missing manifest, and removes unlisted
// objects.
func (j *Job) Verify(ctx context.Context, o VerifyOptions) (_ []PeriodCheck, err error) {
	if o.Now.IsZero() {
		o.Now = j.now()
	}
	r, ctx, st, err := j.start(ctx, RunOptions{Now: o.Now, DryRun: !o.Repair})
	if err != nil {
		return nil, err
	}
	defer r.stop(ctx)
	if o.Repair {
		if _, err := r.statements(ctx, o.Now, ""); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil || closed(o.Stop) {
				return
			}
			_, err = r.statements(ctx, o.Now, "")
		}()
	}
	if o.Last > 0 {
		o.From, o.To = lastRange(r.grid, o.Now.Add(-j.Lateness), o.Last)
	}
	// Only the periods of the job's grid: nothing before its first
	// period, each delivered period on the grid it was delivered with.
	ps, err := r.grid.Range(o.From, o.To)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRange, err)
	}
	if o.Range != nil {
		o.Range(ps)
	}
	var out []PeriodCheck
	for i, p := range ps {
		if closed(o.Stop) {
			j.Log.Info("stopping before the next period", "periods_left", len(ps)-i)
			return out, nil
		}
		if o.Progress != nil {
			o.Progress(i, len(ps), p)
		}
		pc, err := r.verify(ctx, p, st.Checkpoint)
		if err != nil {
			return out, r.explain(ctx, fmt.Errorf("verify %s: %w", p.Name(), err))
		}
		if o.Repair && (pc.Differs || o.Reprice && pc.Revision > 0) {
			if err := r.repair(ctx, &pc, o.Reprice); err != nil {
				return out, r.explain(ctx, fmt.Errorf("repair %s: %w", p.Name(), err))
			}
		}
		out = append(out, pc)
		crashpoint.Hit(crashpoint.AfterVerify)
	}
	if closed(o.Stop) {
		return out, nil
	}
	// The months the range touches: after the periods' repairs are taken
	// in, so that a repaired period is in its month's statement.
	if o.Repair {
		if _, err := r.statements(ctx, o.Now, ""); err != nil {
			return out, err
		}
	}
	mcs, err := r.verifyMonths(ctx, ps, o.Repair)
	if o.Months != nil {
		o.Months(mcs)
	}
	return out, err
}

// lastRange is [from, to) of verify --last d: to is the start of the
// grid's period that holds the watermark, from the start of the one that
// holds to - d (one period back when that is to itself).
func lastRange(g report.Grid, watermark time.Time, d time.Duration) (from, to time.Time) {
	to, from = watermark, watermark.Add(-d)
	if p, ok := g.At(to); ok {
		to = p.Start
	}
	if p, ok := g.At(to.Add(-d)); ok {
		from = p.Start
	} else {
		from = to.Add(-d)
	}
	if !from.Before(to) {
		if p, ok := g.At(to.Add(-time.Nanosecond)); ok {
			from = p.Start
		} else {
			from = to.Add(-time.Nanosecond)
		}
	}
	return from, to
}

// verify checks one period.
func (r *runner) verify(ctx context.Context, p report.Period, cp time.Time) (PeriodCheck, error) {
	pc := PeriodCheck{Period: p}
	pb := r.publisher()
	cur, err := pb.Current(ctx, p)
	if err != nil {
		return pc, err
	}
	if cur.Manifest == nil {
		pc.Status = VerifyNotDelivered
		if !cp.IsZero() && !p.End.After(cp) {
			pc.Status, pc.Differs = VerifyNoManifest, true
		}
		for _, key := range cur.Intents {
			pc.Problems = append(pc.Problems, publish.Problem{Kind: publish.ProblemPending, Key: key})
		}
		return pc, nil
	}
	pc.Revision, pc.ItemsManifest = cur.Manifest.Revision, cur.Manifest.ItemsRead
	dir, err := r.scratch.Sub(p.Name())
	if err != nil {
		return pc, err
	}
	defer os.RemoveAll(dir)
	col, err := collect.Read(ctx, r.collectConfig(dir, p, cur.Manifest), r.j.Source, p)
	if err != nil {
		return pc, err
	}
	pc.ItemsNow = col.ItemsRead
	same := sameItems(cur.Manifest, col)
	col.Close()
	if pc.Problems, err = pb.CheckObjects(ctx, cur); err != nil {
		return pc, err
	}
	switch {
	case !same:
		pc.Status, pc.Differs = VerifyItemsChanged, true
	case len(pc.Problems) > 0:
		pc.Status, pc.Differs = VerifyObjects, true
	default:
		pc.Status = VerifyOK
	}
	return pc, nil
}

// restored counts the objects verify found missing or corrupt that a
// repair wrote back. (A repair rewrites every object of the revision, the
// intact ones with the bytes they already have: only these were restored.)
func restored(problems []publish.Problem, uploaded []report.FileInfo) int {
	n := 0
	for _, pr := range problems {
		if pr.Kind != publish.ProblemMissing && pr.Kind != publish.ProblemCorrupt {
			continue
		}
		if slices.ContainsFunc(uploaded, func(f report.FileInfo) bool { return f.Key == pr.Key }) {
			n++
		}
	}
	return n
}

// repair fixes what verify found in one period; with reprice it also
// prices the period with today's rates.
func (r *runner) repair(ctx context.Context, pc *PeriodCheck, reprice bool) error {
	p := pc.Period
	needsBuild := pc.Status != VerifyObjects || reprice
	for _, pr := range pc.Problems {
		if pr.Kind == publish.ProblemMissing || pr.Kind == publish.ProblemCorrupt {
			needsBuild = true
		}
	}
	if needsBuild {
		m := modeRepair
		if reprice {
			m = modeReprice
		}
		m.restore = map[string]bool{}
		for _, pr := range pc.Problems {
			if pr.Kind == publish.ProblemMissing || pr.Kind == publish.ProblemCorrupt {
				m.restore[pr.Key] = true
			}
		}
		res, err := r.build(ctx, p, m)
		if errors.Is(err, ErrNotRepairable) {
			pc.NotRepairable = err.Error()
			if n := restored(pc.Problems, res.Uploaded); n > 0 {
				pc.NotRepairable += fmt.Sprintf("; restored %d other object(s)", n)
			}
			r.j.Log.Error("period not repairable", LogPeriod, p.Name(), "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		if rs, err := r.restated(ctx, res, r.opts.Now); err != nil {
			return err
		} else if rs != nil {
			u := checkpoint.Update{Restated: rs}
			if err := r.j.State.Update(ctx, r.j.Name, r.leaseNow(), r.j.now(), u); err != nil {
				return fmt.Errorf("record restatement: %w", err)
			}
		}
		switch {
		case res.Outcome == OutcomePublished && res.Previous != nil && reprice:
			pc.Repaired = fmt.Sprintf("repriced as revision %d", res.Manifest.Revision)
		case !pc.Differs:
			// Re-priced to the same prices: nothing to repair.
			return nil
		case res.Outcome == OutcomePublished && res.Previous == nil:
			pc.Repaired = fmt.Sprintf("published revision %d", res.Manifest.Revision)
		case res.Outcome == OutcomePublished:
			pc.Repaired = fmt.Sprintf("restated as revision %d", res.Manifest.Revision)
		default:
			pc.Repaired = fmt.Sprintf("restored %d object(s) of revision %d", restored(pc.Problems, res.Uploaded), res.Manifest.Revision)
		}
	}
	// A rebuild cleaned what its publication knew of; unlisted objects
	// found in folders it did not list go now.
	pb := r.publisher()
	cur, err := pb.Current(ctx, p)
	if err != nil {
		return err
	}
	var listed map[string]bool
	if cur.Manifest != nil {
		listed = make(map[string]bool, len(cur.Manifest.Files))
		for _, f := range cur.Manifest.Files {
			listed[f.Key] = true
		}
		maps.Copy(listed, cur.Manifest.PartKeys())
	}
	var stale []publish.Problem
	for _, pr := range pc.Problems {
		if !listed[pr.Key] {
			stale = append(stale, pr)
		}
	}
	if err := pb.RemoveUnlisted(ctx, p, stale); err != nil {
		return err
	}
	if pc.Repaired == "" {
		pc.Repaired = fmt.Sprintf("removed %d unlisted object(s)", len(pc.Problems))
	}
	return nil
}

// closed reports whether stop is closed (a nil stop never is).
func closed(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

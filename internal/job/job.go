// Package job runs the report job: it takes the job's lease, works out the
// due periods from the checkpoint, builds and publishes each one (collect,
// aggregate, encode, publish), moves the checkpoint after each period's
// manifest is in the sink, then rechecks delivered periods that are owed a
// re-read and restates those whose items changed. It also runs backfills
// and verify.
package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/fence"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/scratch"
	"github.com/reportjob/reportjob/internal/sink"
)

// Log attribute keys used on every line of a run.
const (
	LogJob    = "job"
	LogRunID  = "run_id"
	LogPeriod = "period"
)

// Config is what the job does (the report.*, keys.* and commission.*
// configuration).
type Config struct {
	Name             string
	Period, Lateness time.Duration
	// Start is the first period when there is no checkpoint.
	Start        time.Time
	MaxPeriods   int
	RecheckAfter []time.Duration
	// DedupeWindow 0 dedupes within a period only.
	DedupeWindow time.Duration
	Shards       int
	// Concurrency bounds partition Queries, uploads and deletes in flight.
	Concurrency int
	LineItems   bool
	AgencyFiles encode.Formats
	// Rates are today's commission rates (config commission.*): a period
	// billed before is priced with the rates its manifest recorded
	// (pricing.ForPeriod).
	Rates pricing.Table
	// SortMemBytes is the memory budget of each external sort (0: default).
	SortMemBytes int
	// TempDir holds the run's scratch folder ("" = the OS default).
	TempDir string
	// Version and SinkURL are written into manifests.
	Version, SinkURL string
	// Statements configures the monthly close.
	Statements Statements
}

// Job is one configured job with its backends.
type Job struct {
	Config
	Source collect.Source
	// Index is the dedupe index; unused when DedupeWindow is 0.
	Index  collect.Index
	State  checkpoint.Store
	Bucket *sink.Bucket
	// Owner names this run in the lease (host, pid, run id); RunID names
	// its publication intents and scratch folder.
	Owner, RunID string
	// LeaseTTL defaults to DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Clock is the wall clock of the lease (default time.Now). The report
	// clock ("now" of due periods) is RunOptions.Now.
	Clock func() time.Time
	Log   *slog.Logger
	// OnSummary, when set, is called with every summary row published (the
	// demo prints them).
	OnSummary func(report.SummaryRow)
}

func (j *Job) now() time.Time {
	if j.Clock == nil {
		return time.Now()
	}
	return j.Clock()
}

func (j *Job) ttl() time.Duration {
	if j.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return j.LeaseTTL
}

// ErrBadRange is wrapped by errors about --from/--to.
var ErrBadRange = errors.New("bad range")

// ErrRecheckFailed is wrapped by the error of a run in which the recheck
// of one or more periods failed (Result.RechecksFailed says which): the
// run did everything else, and each failed recheck stays owed.
var ErrRecheckFailed = errors.New("recheck failed")

// RecheckFailure is a recheck that failed, and why.
type RecheckFailure struct {
	Period report.Period
	Err    error
}

// RunOptions select what a run does.
type RunOptions struct {
	// Now is the report clock: periods are due when Now >= end+lateness.
	Now time.Time
	// DryRun reads and builds every due period, writes nothing and moves
	// nothing. It does not take the lease.
	DryRun bool
	// Backfill rebuilds the delivered periods in [From, To) and never
	// moves the checkpoint: To after the checkpoint is a bad range (the
	// periods after it are run's).
	Backfill bool
	From, To time.Time
	// Progress, when set, is called before each period is built; what is
	// "period", "recheck" or "backfill".
	Progress func(i, n int, what string, p report.Period)
	// Stop, when closed, ends the run cleanly before the next period.
	Stop <-chan struct{}
}

// Outcome of a period in a run.
const (
	OutcomePublished = "published" // a new revision was published
	OutcomeUnchanged = "unchanged" // the published revision still holds
	OutcomeDryRun    = "dry-run"   // built, nothing written
)

// PeriodResult is what a run did with one period.
type PeriodResult struct {
	Period   report.Period
	Kind     string // "period", "recheck", "backfill", "repair"
	Outcome  string
	Manifest *report.Manifest
	// Previous is the revision the published one replaced (nil for a
	// first publication or when unchanged).
	Previous *report.Manifest
	// Uploaded are the objects written (listed for a dry run as would be),
	// and Uploads how many. A run's result lists them, and the manifests'
	// Files, only for a period of at most report.InlineEntries objects (or
	// a dry run): a bigger period's lists (400,000 objects at 100,000
	// agencies, 80 MB) are dropped as soon as it is done, before the next
	// period and the month's statements; Uploads and the manifests' other
	// fields stay.
	Uploaded []report.FileInfo
	Uploads  int
}

// done returns pr as a run's result keeps it (see Uploaded).
func (pr PeriodResult) done(dryRun bool) PeriodResult {
	pr.Uploads = len(pr.Uploaded)
	if dryRun || pr.Manifest == nil || len(pr.Manifest.Files) <= report.InlineEntries {
		return pr
	}
	pr.Uploaded = nil
	pr.Manifest, pr.Previous = withoutLists(pr.Manifest), withoutLists(pr.Previous)
	return pr
}

// withoutLists is a copy of m without its object lists.
func withoutLists(m *report.Manifest) *report.Manifest {
	if m == nil {
		return nil
	}
	c := *m
	c.Files, c.ReplacedFiles = nil, nil
	return &c
}

// Restated reports whether r published a revision over an earlier one.
func (r PeriodResult) Restated() bool { return r.Outcome == OutcomePublished && r.Previous != nil }

// Result is what a run did.
type Result struct {
	// Periods delivered (or backfilled, or dry-run built), oldest first.
	Periods []PeriodResult
	// Rechecks done, oldest first.
	Rechecks []PeriodResult
	// RechecksFailed are the rechecks that failed, oldest first: each stays
	// owed, and the next run retries it.
	RechecksFailed []RecheckFailure
	// PeriodsRemaining and RechecksRemaining are still due after the run.
	PeriodsRemaining, RechecksRemaining int
	// Checkpoint after the run.
	Checkpoint time.Time
	// Statements is what the monthly closes of the run did: the one at
	// its start (what an interrupted command left) and the one at its end.
	Statements monthclose.Result
}

// Run runs once. It returns a *checkpoint.HeldError (errors.Is
// checkpoint.ErrLeaseHeld) when another run holds the lease.
func (j *Job) Run(ctx context.Context, opts RunOptions) (res Result, err error) {
	if opts.Now.IsZero() {
		opts.Now = j.now()
	}
	var periods []report.Period
	if opts.Backfill {
		if err := j.checkBackfill(opts); err != nil {
			return res, err
		}
	}
	r, ctx, st, err := j.start(ctx, opts)
	if err != nil {
		return res, err
	}
	defer r.stop(ctx)
	if opts.Backfill {
		// A backfill's range is checked before it touches anything.
		if periods, err = r.grid.Range(opts.From, opts.To); err != nil {
			return res, fmt.Errorf("%w: %w", ErrBadRange, err)
		}
		if err := j.checkWatermark(opts); err != nil {
			return res, err
		}
		if err := r.checkDelivered(opts, st.Checkpoint); err != nil {
			return res, err
		}
	}
	// The monthly close: first what an interrupted command left (so that
	// each restatement is taken in before the next one), then, once the
	// periods and rechecks are done, what this run published.
	// Both count in res.Statements.
	sr, err := r.statements(ctx, opts.Now, "")
	res.Statements = sr
	if err != nil {
		return res, err
	}
	defer func() {
		if r.stopped() || err != nil && !errors.Is(err, ErrRecheckFailed) {
			return
		}
		sr, serr := r.statements(ctx, opts.Now, "")
		res.Statements = res.Statements.Add(sr)
		if serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	res.Checkpoint = st.Checkpoint
	if !opts.Backfill {
		periods, res.PeriodsRemaining, err = r.grid.Due(opts.Now, j.Lateness, j.MaxPeriods)
		if err != nil {
			return res, err
		}
	}
	kind := "period"
	if opts.Backfill {
		kind = "backfill"
	}
	for i, p := range periods {
		if r.stopped() {
			j.Log.Info("stopping before the next period", "periods_left", len(periods)-i)
			res.PeriodsRemaining += len(periods) - i
			return res, nil
		}
		if opts.Progress != nil {
			opts.Progress(i, len(periods), kind, p)
		}
		pr, err := r.deliver(ctx, p, st.Checkpoint, opts.Backfill)
		if err != nil {
			res.PeriodsRemaining += len(periods) - i
			return res, r.explain(ctx, fmt.Errorf("period %s: %w", p.Name(), err))
		}
		res.Periods = append(res.Periods, pr.done(opts.DryRun))
		if !opts.Backfill && !opts.DryRun {
			st.Checkpoint = p.End
			res.Checkpoint = p.End
		}
	}
	if opts.Backfill || opts.DryRun || len(j.RecheckAfter) == 0 {
		return res, nil
	}
	// Rechecks, after the due periods.
	if len(res.Periods) > 0 {
		if st, err = j.State.Load(ctx, j.Name); err != nil {
			return res, fmt.Errorf("load checkpoint: %w", err)
		}
	}
	due, remaining := report.RechecksDue(st.Rechecks, j.RecheckAfter, opts.Now, j.MaxPeriods)
	res.RechecksRemaining = remaining
	for i, e := range due {
		if r.stopped() {
			res.RechecksRemaining += len(due) - i
			return res, nil
		}
		p := report.Period{Start: e.Start, End: e.End}
		if opts.Progress != nil {
			opts.Progress(i, len(due), "recheck", p)
		}
		pr, err := r.recheck(ctx, p)
		if err != nil {
			err = r.explain(ctx, fmt.Errorf("recheck %s: %w", p.Name(), err))
			if runFatal(ctx, err) {
				res.RechecksRemaining += len(due) - i
				return res, err
			}
			// One period's failure (an unreadable previous revision, a
			// failed read) is its own: the recheck was not recorded, so it
			// stays owed and the next run retries it; the younger periods
			// are rechecked now.
			j.Log.Error("recheck failed: it stays owed and the next run retries it", LogPeriod, p.Name(), "err", err)
			res.RechecksFailed = append(res.RechecksFailed, RecheckFailure{Period: p, Err: err})
			continue
		}
		res.Rechecks = append(res.Rechecks, pr.done(opts.DryRun))
	}
	return res, rechecksFailed(res.RechecksFailed)
}

// runFatal reports whether err ends the run rather than the one period it
// happened in: the lease is lost or in question, the state moved under the
// run, or the run was cancelled.
func runFatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, checkpoint.ErrLeaseLost) || errors.Is(err, checkpoint.ErrConflict) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// rechecksFailed is the run's error for the rechecks that failed (nil for
// none): a run that did everything else still fails (exit 1), so that a
// recheck that cannot be done is never reported as ok.
func rechecksFailed(failed []RecheckFailure) error {
	if len(failed) == 0 {
		return nil
	}
	// Each period's error is wrapped too, so that errors.Is finds its
	// cause (a refused delete, a corrupt object).
	verbs := make([]string, len(failed))
	args := []any{ErrRecheckFailed, len(failed)}
	for i, f := range failed {
		verbs[i] = "%w"
		args = append(args, f.Err)
	}
	return fmt.Errorf("%w for %d period(s); each stays owed and the next run retries it: "+strings.Join(verbs, "; "), args...)
}

// checkBackfill checks a backfill's range before the run starts (its
// periods come from the job's grid once the state is loaded).
func (j *Job) checkBackfill(opts RunOptions) error {
	if !opts.To.After(opts.From) {
		return fmt.Errorf("%w: --to %s must be after --from %s", ErrBadRange,
			opts.To.UTC().Format(time.RFC3339), opts.From.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkDelivered refuses a backfill that reaches past the checkpoint cp
// (or any backfill before the first delivery), before it touches
// anything: a backfill rebuilds delivered periods, and the periods after
// the checkpoint are run's, which moves the checkpoint over them so that
// the monthly close counts each (SPEC section 7: every published period is
// counted by exactly one statement).
func (r *runner) checkDelivered(opts RunOptions, cp time.Time) error {
	if !cp.IsZero() && !opts.To.After(cp) {
		return nil
	}
	due := ""
	if ps, n, err := r.grid.Due(opts.Now, r.j.Lateness, 0); err == nil {
		due = fmt.Sprintf(" (%d due at %s)", len(ps)+n, opts.Now.UTC().Format(time.RFC3339))
	}
	to := opts.To.UTC().Format(time.RFC3339)
	if cp.IsZero() {
		return fmt.Errorf("%w: --to %s: no period is delivered yet (no checkpoint): a backfill rebuilds delivered periods, "+
			"and run delivers the periods from report.start%s", ErrBadRange, to, due)
	}
	return fmt.Errorf("%w: --to %s is after the checkpoint %s: a backfill rebuilds delivered periods only, "+
		"and run delivers the periods after the checkpoint%s; use --to %s or earlier", ErrBadRange, to,
		cp.UTC().Format(time.RFC3339), due, cp.UTC().Format(time.RFC3339))
}

// checkWatermark refuses a backfill that reaches beyond the watermark.
func (j *Job) checkWatermark(opts RunOptions) error {
	watermark := opts.Now.Add(-j.Lateness)
	if opts.To.After(watermark) {
		return fmt.Errorf("%w: --to %s is beyond the watermark %s (now - lateness): that period is not complete yet",
			ErrBadRange, opts.To.UTC().Format(time.RFC3339), watermark.UTC().Format(time.RFC3339))
	}
	return nil
}

// runner is one run's state.
type runner struct {
	j       *Job
	opts    RunOptions
	lease   *holder // nil for a dry run
	kept    <-chan struct{}
	cancel  context.CancelCauseFunc
	scratch *scratch.Dir
	// grid says which periods the job has; deliver keeps it up to date.
	grid report.Grid
}

// start refuses a report clock ahead (checkClock), takes the lease (unless
// opts.DryRun) and keeps it renewed, opens
// the run's scratch folder and loads the job's state. The returned context
// is cancelled when the lease is lost; stop undoes the rest.
func (j *Job) start(ctx context.Context, opts RunOptions) (*runner, context.Context, checkpoint.State, error) {
	if err := j.checkClock(opts); err != nil {
		return nil, ctx, checkpoint.State{}, err
	}
	r := &runner{j: j, opts: opts}
	ctx, r.cancel = context.WithCancelCause(ctx)
	if !opts.DryRun {
		h, err := j.acquire(ctx, r.cancel)
		if err != nil {
			r.cancel(nil)
			return nil, ctx, checkpoint.State{}, err
		}
		r.lease, r.kept = h, h.keep(ctx)
		// Every write of the run, down to each HTTP request, checks the
		// lease first (package fence).
		ctx = fence.WithContext(ctx, h)
	}
	if err := r.open(); err != nil {
		r.stop(ctx)
		return nil, ctx, checkpoint.State{}, err
	}
	st, err := j.State.Load(ctx, j.Name)
	if err != nil {
		r.stop(ctx)
		return nil, ctx, checkpoint.State{}, fmt.Errorf("load checkpoint: %w", err)
	}
	if r.grid, err = r.loadGrid(ctx, &st); err != nil {
		r.stop(ctx)
		return nil, ctx, checkpoint.State{}, err
	}
	return r, ctx, st, nil
}

// stop removes the scratch folder and gives the lease back.
func (r *runner) stop(ctx context.Context) {
	r.close()
	r.cancel(nil)
	if r.lease != nil {
		<-r.kept
		r.lease.release(ctx)
	}
}

// Scratch makes a scratch folder for work outside a run (a delivery pass,
// reading a statement) beside the runs' own, under the same rule: it is
// locked while this process lives, and a run on this host removes it once
// its process is gone, however that process ended. The caller closes it.
func (j *Job) Scratch(purpose string) (*scratch.Dir, error) {
	return scratch.New(j.TempDir, j.Name, j.RunID+"-"+purpose)
}

func (r *runner) open() error {
	if n, err := scratch.Sweep(r.j.TempDir, r.j.Name, r.j.Log); err != nil {
		r.j.Log.Warn("sweep scratch folders", "err", err)
	} else if n > 0 {
		r.j.Log.Info("removed the scratch folders of dead runs", "count", n)
	}
	d, err := scratch.New(r.j.TempDir, r.j.Name, r.j.RunID)
	if err != nil {
		return err
	}
	r.scratch = d
	return nil
}

func (r *runner) close() {
	if r.scratch == nil {
		return
	}
	if err := r.scratch.Close(); err != nil {
		r.j.Log.Warn("remove scratch folder", "err", err)
	}
}

func (r *runner) stopped() bool {
	select {
	case <-r.opts.Stop:
		return true
	default:
		return false
	}
}

// explain replaces a bare "context canceled" with the reason the run was
// cancelled (the lease was lost), and says that a run that lost its lease
// lost it, to whom (LostError), whatever its last write said.
func (r *runner) explain(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) && errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w (%w)", cause, err)
	}
	return r.lostLease(ctx, err)
}

// leaseNow returns the lease to fence state writes with.
func (r *runner) leaseNow() checkpoint.Lease { return r.lease.Lease() }

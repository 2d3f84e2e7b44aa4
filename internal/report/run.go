package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Log attribute keys used on every line of a run.
const (
	LogJob    = "job"
	LogRunID  = "run_id"
	LogPeriod = "period"
)

// Job runs the report job: it takes the job's lease, works out the due
// periods from the checkpoint, builds each one, and moves the checkpoint
// after each period's manifest is delivered.
type Job struct {
	Name        string
	Period      time.Duration
	Lateness    time.Duration
	Start       time.Time // first period when there is no checkpoint
	MaxPeriods  int
	Builder     *Builder
	Checkpoints checkpoint.Store
	// Owner names this run in the lease (host, pid, run id).
	Owner string
	// LeaseTTL is how long a lease lasts unless renewed (default 2m); it is
	// renewed every LeaseTTL/3 while the run works.
	LeaseTTL time.Duration
	// Clock is the wall clock used for the lease (default time.Now). The
	// report clock ("now" of due periods) is RunOptions.Now.
	Clock func() time.Time
	Log   *slog.Logger
}

// RunOptions selects what a run does.
type RunOptions struct {
	// Now is the report clock: periods are due when Now >= end+lateness.
	Now time.Time
	// DryRun reads and builds every due period into a Discard sink and
	// moves nothing. It does not take the lease.
	DryRun bool
	// Backfill rebuilds the periods in [From, To) whatever the checkpoint
	// and never moves it.
	Backfill bool
	From, To time.Time
	// Progress, when set, is called before each period is built.
	Progress func(i, n int, p Period)
	// Stop, when closed, ends the run cleanly before the next period: the
	// period being built finishes and is committed first.
	Stop <-chan struct{}
}

// Result is what a run did.
type Result struct {
	Periods          []*Manifest
	PeriodsRemaining int
	Checkpoint       time.Time // after the run
	Lease            checkpoint.Lease
}

// now reads the lease clock; Job's zero values mean time.Now and 2m, and
// Run never writes to j, so one Job may run from several goroutines.
func (j *Job) now() time.Time {
	if j.Clock == nil {
		return time.Now()
	}
	return j.Clock()
}

func (j *Job) ttl() time.Duration {
	if j.LeaseTTL <= 0 {
		return 2 * time.Minute
	}
	return j.LeaseTTL
}

// ErrBadRange is wrapped by errors about --from/--to.
var ErrBadRange = errors.New("bad backfill range")

// Run runs once. It returns a *checkpoint.HeldError (errors.Is
// checkpoint.ErrLeaseHeld) when another run holds the lease.
func (j *Job) Run(ctx context.Context, opts RunOptions) (res Result, err error) {
	if opts.Now.IsZero() {
		opts.Now = j.now()
	}
	var periods []Period
	if opts.Backfill {
		if periods, err = j.backfillPeriods(opts); err != nil {
			return res, err
		}
	}

	if !opts.DryRun {
		lease, err := j.Checkpoints.Acquire(ctx, j.Name, j.Owner, j.now(), j.ttl())
		if err != nil {
			return res, fmt.Errorf("acquire lease: %w", err)
		}
		res.Lease = lease
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		keeper := j.keepLease(ctx, cancel, lease)
		defer func() {
			cancel(nil)
			res.Lease = <-keeper // the last renewal; the goroutine has stopped
			// Release with a fresh context: the run's may be cancelled.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer rcancel()
			if rerr := j.Checkpoints.Release(rctx, j.Name, res.Lease); rerr != nil {
				j.Log.Warn("release lease", "err", rerr)
			}
		}()
	}

	st, err := j.Checkpoints.Load(ctx, j.Name)
	if err != nil {
		return res, fmt.Errorf("load checkpoint: %w", err)
	}
	res.Checkpoint = st.Checkpoint
	if !opts.Backfill {
		periods, res.PeriodsRemaining, err = Due(st.Checkpoint, j.Start, opts.Now, j.Period, j.Lateness, j.MaxPeriods)
		if err != nil {
			return res, err
		}
	}

	b := j.Builder
	if opts.DryRun {
		dry := *b
		dry.sink = Discard{}
		b = &dry
	}
	for i, p := range periods {
		select {
		case <-opts.Stop:
			j.Log.Info("stopping before the next period", "periods_left", len(periods)-i)
			res.PeriodsRemaining += len(periods) - i
			return res, nil
		default:
		}
		if opts.Progress != nil {
			opts.Progress(i, len(periods), p)
		}
		log := j.Log.With(LogPeriod, p.Name())
		started := time.Now()
		m, err := b.Build(ctx, p)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
				err = cause // the lease was lost: say so rather than "context canceled"
			}
			res.PeriodsRemaining += len(periods) - i
			return res, fmt.Errorf("period %s: %w", p.Name(), err)
		}
		log.Info("period built", "transactions", m.Transactions, "rejects", m.Rejects,
			"duplicates", m.DuplicatesDropped, "items_read", m.ItemsRead, "files", len(m.Files),
			"duration_ms", time.Since(started).Milliseconds())
		res.Periods = append(res.Periods, m)
		if opts.DryRun || opts.Backfill {
			continue
		}
		// res.Lease is the acquired lease: renewals change only its
		// Expires, and the store checks its owner and token.
		if err := j.Checkpoints.Commit(ctx, j.Name, res.Lease, j.now(), res.Checkpoint, p.End); err != nil {
			res.PeriodsRemaining += len(periods) - i
			return res, fmt.Errorf("commit checkpoint %s: %w", p.End.UTC().Format(time.RFC3339), err)
		}
		res.Checkpoint = p.End
		log.Info("checkpoint moved", "checkpoint", p.End.UTC().Format(time.RFC3339))
	}
	return res, nil
}

func (j *Job) backfillPeriods(opts RunOptions) ([]Period, error) {
	ps, err := Range(opts.From, opts.To, j.Period)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRange, err)
	}
	watermark := opts.Now.Add(-j.Lateness)
	if opts.To.After(watermark) {
		return nil, fmt.Errorf("%w: --to %s is beyond the watermark %s (now - lateness): that period is not complete yet",
			ErrBadRange, opts.To.UTC().Format(time.RFC3339), watermark.UTC().Format(time.RFC3339))
	}
	return ps, nil
}

// keepLease renews lease every TTL/3 until ctx ends. When the lease is
// lost it cancels the run with checkpoint.ErrLeaseLost. When it stops, the
// returned channel delivers the last lease it holds (for Release).
func (j *Job) keepLease(ctx context.Context, cancel context.CancelCauseFunc, lease checkpoint.Lease) <-chan checkpoint.Lease {
	done := make(chan checkpoint.Lease, 1)
	l := lease
	go func() {
		defer func() { done <- l }()
		t := time.NewTicker(j.ttl() / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			nl, err := j.Checkpoints.Renew(ctx, j.Name, l, j.now(), j.ttl())
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				if errors.Is(err, checkpoint.ErrLeaseLost) {
					j.Log.Error("lease lost: stopping the run", "owner", l.Owner, "token", l.Token)
					cancel(fmt.Errorf("renew lease: %w", err))
					return
				}
				j.Log.Warn("renew lease failed; will retry", "err", err)
				continue
			}
			l = nl
		}
	}()
	return done
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/delivery"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/metrics"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
)

// runSummary is the JSON line `run` (and each scheduled run) ends with.
type runSummary struct {
	Command          string `json:"command"`
	Job              string `json:"job"`
	RunID            string `json:"run_id"`
	Status           string `json:"status"` // ok | nothing_due | failed | lease_held | bad_usage | interrupted
	Mode             string `json:"mode"`   // run | backfill | dry-run
	PeriodsProcessed int    `json:"periods_processed"`
	PeriodsRemaining int    `json:"periods_remaining"`
	FirstPeriod      string `json:"first_period,omitempty"`
	LastPeriod       string `json:"last_period,omitempty"`
	Checkpoint       string `json:"checkpoint,omitempty"`
	ItemsRead        int64  `json:"items_read"`
	Transactions     int64  `json:"transactions"`
	Duplicates       int64  `json:"duplicates_dropped"`
	DuplicatesAcross int64  `json:"duplicates_across_periods"`
	Rejects          int64  `json:"rejects"`
	Objects          int    `json:"objects_written"`
	// StatementObjects is the part of Objects that the monthly closes
	// uploaded (the rest are the periods').
	StatementObjects  int   `json:"statement_objects_written,omitempty"`
	Rechecks          int   `json:"rechecks"`
	RechecksRemaining int   `json:"rechecks_remaining"`
	RechecksFailed    int   `json:"rechecks_failed,omitempty"` // still owed: the next run retries them
	Restated          int   `json:"restated"`
	LateItems         int64 `json:"late_items"`
	// The monthly closes of the run: at its start (what an interrupted
	// command left) and at its end.
	StatementsIssued       int `json:"statements_issued"`
	MonthsClosed           int `json:"months_closed,omitempty"`
	PriorPeriodAdjustments int `json:"prior_period_adjustments,omitempty"`
	// UnlistedAgencies are the agencies of the statements published that
	// the agency directory lacks (named by id, with a warning).
	UnlistedAgencies int   `json:"statements_unlisted_agencies,omitempty"`
	DurationMS       int64 `json:"duration_ms"`
	// Delivery is the delivery pass after the run (delivery.*; absent
	// when nothing is configured).
	Delivery     *deliverySummary `json:"delivery,omitempty"`
	LeaseHolder  string           `json:"lease_holder,omitempty"`
	LeaseExpires string           `json:"lease_expires,omitempty"`
	Error        string           `json:"error,omitempty"`
	// rejectPeriods counts the published periods with rejects (not in
	// the line: rejects counts them).
	rejectPeriods int
}

func cmdRun(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "run")
	backfill := fs.Bool("backfill", false, "rebuild the delivered periods in [--from, --to) (--to at or before the checkpoint); never moves it")
	var from, to, now timeFlag
	fs.Var(&from, "from", "backfill start (a period boundary)")
	fs.Var(&to, "to", "backfill end, exclusive (a period boundary, at or before the checkpoint)")
	dry := fs.Bool("dry-run", false, "read and build everything, list what would be written, write nothing")
	fs.Var(&now, "now", "fix the report clock (replay and tests)")
	failOnRejects := fs.Bool("fail-on-rejects", false, "exit 5 when the periods published have rejects (after publishing them)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	opts := job.RunOptions{Now: now.t, DryRun: *dry, Backfill: *backfill, From: from.t, To: to.t}
	switch {
	case *backfill && (from.t.IsZero() || to.t.IsZero()):
		return usagef("run --backfill needs --from and --to")
	case !*backfill && (!from.t.IsZero() || !to.t.IsZero()):
		return usagef("run: --from and --to go with --backfill")
	}
	work, in, release := c.interruptible(ctx, "the period in progress (not committed: the next run redoes it)")
	defer release()
	opts.Stop, c.interrupt = in.stopCh(), in
	sum, err := c.runOnce(work, opts)
	if err == nil && *failOnRejects && sum.rejectPeriods > 0 {
		return fmt.Errorf("%d period(s) published with rejects: %w", sum.rejectPeriods, errRejects)
	}
	return err
}

// runOnce opens the backends, runs the job once, prints the summary line
// and pushes metrics. The backends are closed before it returns, so the
// embedded file is free between scheduled runs.
func (c *cli) runOnce(ctx context.Context, opts job.RunOptions) (runSummary, error) {
	started := time.Now()
	sum := runSummary{Command: "run", Job: c.cfg.JobName, RunID: c.runID, Mode: "run"}
	switch {
	case opts.DryRun:
		sum.Mode = "dry-run"
	case opts.Backfill:
		sum.Mode = "backfill"
	}
	res, err := c.runJob(ctx, opts)
	if c.interrupt.fired() != nil {
		done := fmt.Sprintf("%d period(s) and %d recheck(s) done", len(res.Periods), len(res.Rechecks))
		if !res.Checkpoint.IsZero() {
			done += ", checkpoint " + res.Checkpoint.UTC().Format(time.RFC3339)
		}
		err = c.interrupt.result(err, done, "nothing is lost: run the same command again to continue")
	}
	sum.DurationMS = time.Since(started).Milliseconds()
	sum.PeriodsProcessed = len(res.Periods)
	sum.PeriodsRemaining = res.PeriodsRemaining
	sum.Rechecks, sum.RechecksRemaining, sum.RechecksFailed = len(res.Rechecks), res.RechecksRemaining, len(res.RechecksFailed)
	if !res.Checkpoint.IsZero() {
		sum.Checkpoint = res.Checkpoint.UTC().Format(time.RFC3339)
	}
	for i, pr := range res.Periods {
		if i == 0 {
			sum.FirstPeriod = pr.Period.Start.UTC().Format(time.RFC3339)
		}
		sum.LastPeriod = pr.Period.Start.UTC().Format(time.RFC3339)
		m := pr.Manifest
		sum.ItemsRead += m.ItemsRead
		sum.Transactions += m.Transactions
		sum.Duplicates += m.DuplicatesWithinPeriod + m.DuplicatesAcrossPeriods
		sum.DuplicatesAcross += m.DuplicatesAcrossPeriods
		sum.Rejects += m.Rejects
	}
	for _, pr := range append(append([]job.PeriodResult{}, res.Periods...), res.Rechecks...) {
		sum.Objects += pr.Uploads
		if pr.Restated() {
			sum.Restated++
			sum.LateItems += max(pr.Manifest.ItemsRead-pr.Previous.ItemsRead, 0)
		}
	}
	sum.StatementObjects = res.Statements.Uploaded()
	sum.Objects += sum.StatementObjects
	sum.StatementsIssued, sum.MonthsClosed, sum.PriorPeriodAdjustments = len(res.Statements.Months), res.Statements.Closed, res.Statements.Adjustments
	sum.UnlistedAgencies = res.Statements.UnlistedAgencies
	var held *checkpoint.HeldError
	var interrupted *interruptError
	switch {
	case errors.As(err, &interrupted):
		sum.Status = "interrupted"
	case err == nil && len(res.Periods) == 0 && len(res.Rechecks) == 0 && len(res.Statements.Months) == 0:
		sum.Status = "nothing_due"
	case err == nil:
		sum.Status = "ok"
	case errors.As(err, &held):
		sum.Status = "lease_held"
		sum.LeaseHolder = held.Owner
		sum.LeaseExpires = held.Expires.UTC().Format(time.RFC3339)
	case exitCode(err) == exitUsage:
		sum.Status = "bad_usage"
	case exitCode(err) == exitLeaseHeld:
		sum.Status = "lease_held"
	default:
		sum.Status = "failed"
	}
	if lost := (*job.LostError)(nil); errors.As(err, &lost) && lost.Holder.Token != lost.Ours.Token {
		// Fenced out: the run that took the lease over.
		sum.LeaseHolder = lost.Holder.Owner
		if !lost.Holder.Expires.IsZero() {
			sum.LeaseExpires = lost.Holder.Expires.UTC().Format(time.RFC3339)
		}
	}
	if err != nil {
		sum.Error = c.withNoConfig("run", err).Error()
	}
	sum.Delivery, c.delivered = c.delivered, nil
	sum.rejectPeriods = c.rejectNote(res, opts.DryRun)
	c.printJSON(sum)
	c.pushMetrics(ctx, sum, res, started, err == nil, opts)
	return sum, err
}

func (c *cli) runJob(ctx context.Context, opts job.RunOptions) (job.Result, error) {
	// Refusals come before anything is created: no store file, no sink
	// folder.
	if storeMissing(c.cfg) && !opts.Backfill && c.cfg.Report.Start.IsZero() {
		return job.Result{}, report.ErrNoStart
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return job.Result{}, err
	}
	defer st.close()
	if !opts.Backfill {
		state, err := st.Load(ctx, c.cfg.JobName)
		if err != nil {
			return job.Result{}, err
		}
		if state.Checkpoint.IsZero() && c.cfg.Report.Start.IsZero() {
			return job.Result{}, report.ErrNoStart
		}
		if neverRan(state) {
			if err := c.refuseFirstRun(ctx); err != nil {
				return job.Result{}, err
			}
		}
	}
	b, err := openBucket(ctx, c)
	if err != nil {
		return job.Result{}, err
	}
	defer b.Close()
	j := c.newJob(st, b, nil)
	opts.Progress = c.progress()
	res, err := j.Run(ctx, opts)
	c.bar.clear()
	if err == nil && !opts.DryRun && deliveryConfigured(c) {
		// After the record is committed; a failure here never fails the
		// run (it is in the summary line, status and metrics).
		dres, derr := c.deliver(ctx, st, b, j, delivery.Options{})
		if derr != nil {
			c.log.Error("delivery pass failed; the next run tries again", "err", derr)
		}
		c.delivered = summarize(dres, derr)
	}
	if opts.DryRun {
		for _, pr := range res.Periods {
			c.printDryRun(b, pr)
		}
	}
	return res, err
}

// printDryRun lists what a dry run would have written for one period.
func (c *cli) printDryRun(b *bucket, pr job.PeriodResult) {
	p, m := pr.Period, pr.Manifest
	if pr.Outcome == job.OutcomeUnchanged {
		fmt.Fprintf(c.stdout, "unchanged %s (revision %d)\n", p.Name(), m.Revision)
		return
	}
	for _, f := range pr.Uploaded {
		fmt.Fprintf(c.stdout, "would write %s (%d bytes, %d rows)\n", b.path(f.Key), f.Bytes, f.Rows)
	}
	fmt.Fprintf(c.stdout, "would write %s (revision %d)\n", b.path(report.ManifestKey(p)), m.Revision)
}

func (c *cli) progress() func(i, n int, what string, p report.Period) {
	if c.bar != nil {
		return c.bar.set
	}
	return func(i, n int, what string, p report.Period) {
		c.log.Info("building "+what, job.LogPeriod, p.Name(), "n", i+1, "of", n)
	}
}

// newJob wires the configured job; onSummary may be nil.
func (c *cli) newJob(st *store, b *bucket, onSummary func(report.SummaryRow)) *job.Job {
	cfg := c.cfg
	var formats encode.Formats
	for _, f := range cfg.Report.AgencyFiles {
		switch f {
		case "csv":
			formats.CSV = true
		case "parquet":
			formats.Parquet = true
		}
	}
	host, _ := os.Hostname()
	return &job.Job{
		Config: job.Config{
			Name: cfg.JobName, Period: cfg.Report.Period, Lateness: cfg.Report.Lateness, Start: cfg.Report.Start,
			MaxPeriods: cfg.Report.MaxPeriodsPerRun, RecheckAfter: cfg.Report.RecheckAfter,
			DedupeWindow: cfg.Report.DedupeWindow, Shards: cfg.Keys.Shards, Concurrency: cfg.Report.Concurrency,
			LineItems: cfg.Report.LineItems, AgencyFiles: formats,
			Rates:   pricing.Table{Default: cfg.Commission.Default, Agencies: cfg.Commission.Agencies},
			Version: version, SinkURL: cfg.Sink.URL,
			Statements: statementsConfig(cfg, b),
		},
		Source: st.Source, Index: st.Index, State: st, Bucket: b.Bucket,
		Owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), c.runID), RunID: c.runID, LeaseTTL: cfg.Report.LeaseTTL,
		Log: c.log, OnSummary: onSummary,
	}
}

// pushTimeout bounds the metrics push at the end of a run: a slow
// Pushgateway must not hold up the job or its shutdown.
const pushTimeout = 5 * time.Second

func (c *cli) pushMetrics(ctx context.Context, sum runSummary, res job.Result, started time.Time, ok bool, opts job.RunOptions) {
	url := c.cfg.Metrics.PushgatewayURL
	// Metrics describe the scheduled job: a dry run or a backfill by hand
	// must not overwrite its last success, and a run that found the lease
	// held did not run at all (the holder pushes its own).
	if url == "" || opts.DryRun || opts.Backfill || sum.Status == "lease_held" {
		return
	}
	end := time.Now()
	r := metrics.Run{
		Job: c.cfg.JobName, Start: started, End: end, Success: ok,
		PeriodsProcessed: sum.PeriodsProcessed, PeriodsRemaining: sum.PeriodsRemaining,
		Transactions: sum.Transactions, Rejects: sum.Rejects, Duplicates: sum.Duplicates,
		Rechecks: sum.Rechecks, RechecksRemaining: sum.RechecksRemaining, Restatements: sum.Restated, LateItems: sum.LateItems,
		StatementsIssued: sum.StatementsIssued, MonthsClosed: sum.MonthsClosed, PriorPeriodAdjustments: sum.PriorPeriodAdjustments,
		UnlistedAgencies: sum.UnlistedAgencies,
		Delivery:         deliveryMetrics(sum.Delivery),
	}
	if !res.Checkpoint.IsZero() {
		now := opts.Now
		if now.IsZero() {
			now = end
		}
		r.LagSeconds = now.Sub(res.Checkpoint).Seconds()
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
	defer cancel()
	if err := metrics.Push(pctx, url, r, nil); err != nil {
		c.log.Warn("push metrics", "err", err)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/metrics"
	"github.com/reportjob/reportjob/internal/report"
)

// runSummary is the JSON line `run` (and each scheduled run) ends with.
type runSummary struct {
	Command          string `json:"command"`
	Job              string `json:"job"`
	RunID            string `json:"run_id"`
	Status           string `json:"status"` // ok | nothing_due | failed | lease_held | bad_usage
	Mode             string `json:"mode"`   // run | backfill | dry-run
	PeriodsProcessed int    `json:"periods_processed"`
	PeriodsRemaining int    `json:"periods_remaining"`
	FirstPeriod      string `json:"first_period,omitempty"`
	LastPeriod       string `json:"last_period,omitempty"`
	Checkpoint       string `json:"checkpoint,omitempty"`
	ItemsRead        int64  `json:"items_read"`
	Transactions     int64  `json:"transactions"`
	Duplicates       int64  `json:"duplicates_dropped"`
	Rejects          int64  `json:"rejects"`
	Files            int    `json:"files"`
	DurationMS       int64  `json:"duration_ms"`
	LeaseHolder      string `json:"lease_holder,omitempty"`
	LeaseExpires     string `json:"lease_expires,omitempty"`
	Error            string `json:"error,omitempty"`
}

func cmdRun(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "run", "[--backfill --from T --to T] [--dry-run] [--now T]")
	backfill := fs.Bool("backfill", false, "recompute the periods in [--from, --to) whatever the checkpoint; never moves it")
	var from, to, now timeFlag
	fs.Var(&from, "from", "backfill start (a period boundary)")
	fs.Var(&to, "to", "backfill end, exclusive (a period boundary, not beyond now - lateness)")
	dry := fs.Bool("dry-run", false, "read and build everything, list what would be written, write nothing")
	fs.Var(&now, "now", "fix the clock (replay and tests)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	opts := report.RunOptions{Now: now.t, DryRun: *dry, Backfill: *backfill, From: from.t, To: to.t}
	switch {
	case *backfill && (from.t.IsZero() || to.t.IsZero()):
		return usagef("run --backfill needs --from and --to")
	case !*backfill && (!from.t.IsZero() || !to.t.IsZero()):
		return usagef("run: --from and --to go with --backfill")
	}
	_, err := c.runOnce(ctx, opts)
	return err
}

// runOnce opens the backends, runs the job once, prints the summary line
// and pushes metrics. The backends are closed before it returns, so the
// embedded file is free between scheduled runs.
func (c *cli) runOnce(ctx context.Context, opts report.RunOptions) (runSummary, error) {
	started := time.Now()
	sum := runSummary{Command: "run", Job: c.cfg.JobName, RunID: c.runID, Mode: "run"}
	switch {
	case opts.DryRun:
		sum.Mode = "dry-run"
	case opts.Backfill:
		sum.Mode = "backfill"
	}
	res, err := c.runJob(ctx, opts)
	sum.DurationMS = time.Since(started).Milliseconds()
	sum.PeriodsProcessed = len(res.Periods)
	sum.PeriodsRemaining = res.PeriodsRemaining
	if !res.Checkpoint.IsZero() {
		sum.Checkpoint = res.Checkpoint.UTC().Format(time.RFC3339)
	}
	for i, m := range res.Periods {
		if i == 0 {
			sum.FirstPeriod = m.PeriodStart.Format(time.RFC3339)
		}
		sum.LastPeriod = m.PeriodStart.Format(time.RFC3339)
		sum.ItemsRead += m.ItemsRead
		sum.Transactions += m.Transactions
		sum.Duplicates += m.DuplicatesDropped
		sum.Rejects += m.Rejects
		sum.Files += len(m.Files)
	}
	var held *checkpoint.HeldError
	switch {
	case err == nil && len(res.Periods) == 0:
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
	if err != nil {
		sum.Error = err.Error()
	}
	c.printJSON(sum)
	c.pushMetrics(ctx, sum, res, started, err == nil, opts)
	return sum, err
}

func (c *cli) runJob(ctx context.Context, opts report.RunOptions) (report.Result, error) {
	st, err := openStore(ctx, c)
	if err != nil {
		return report.Result{}, err
	}
	defer st.close()
	sk, err := openSink(ctx, c)
	if err != nil {
		return report.Result{}, err
	}
	job := c.newJob(st, sk, nil)
	if isTerminal(c.stderr) {
		opts.Progress = progressBar(c)
	} else {
		opts.Progress = func(i, n int, p report.Period) {
			c.log.Info("building period", report.LogPeriod, p.Name(), "n", i+1, "of", n)
		}
	}
	res, err := job.Run(ctx, opts)
	if isTerminal(c.stderr) {
		fmt.Fprintln(c.stderr)
	}
	if opts.DryRun {
		for _, m := range res.Periods {
			for _, f := range m.Files {
				fmt.Fprintf(c.stdout, "would write %s (%d bytes, %d rows)\n", sk.url(f.Key), f.Bytes, f.Rows)
			}
			fmt.Fprintf(c.stdout, "would write %s\n", sk.url("period="+report.Period{Start: m.PeriodStart}.Name()+"/manifest.json"))
		}
	}
	return res, err
}

// newJob wires the configured job; onSummary may be nil.
func (c *cli) newJob(st *store, sk *sink, onSummary func(report.SummaryRow)) *report.Job {
	cfg := c.cfg
	agencies := make(map[string]int32, len(cfg.Commission.Agencies))
	for id, bps := range cfg.Commission.Agencies {
		agencies[id] = int32(bps)
	}
	b := report.NewBuilder(report.Config{
		Job: cfg.JobName, Shards: cfg.Keys.Shards, LineItems: cfg.Report.LineItems,
		CSV: hasFormat(cfg.Report.Formats, "csv"), Concurrency: cfg.Report.Concurrency,
		DefaultBPS: int32(cfg.Commission.DefaultBPS), AgencyBPS: agencies,
		Version: version, SinkURL: cfg.Sink.URL, OnSummary: onSummary,
	}, st, sk, c.log)
	host, _ := os.Hostname()
	return &report.Job{
		Name: cfg.JobName, Period: cfg.Report.Period, Lateness: cfg.Report.Lateness, Start: cfg.Report.Start,
		MaxPeriods: cfg.Report.MaxPeriodsPerRun, Builder: b, Checkpoints: st,
		Owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), c.runID), Log: c.log,
	}
}

func hasFormat(formats []string, f string) bool {
	for _, x := range formats {
		if strings.EqualFold(x, f) {
			return true
		}
	}
	return false
}

func progressBar(c *cli) func(i, n int, p report.Period) {
	return func(i, n int, p report.Period) {
		const width = 30
		done := width * i / max(n, 1)
		fmt.Fprintf(c.stderr, "\r[%s%s] %d/%d period %s ", strings.Repeat("#", done), strings.Repeat(".", width-done), i+1, n, p.Name())
	}
}

// pushTimeout bounds the metrics push at the end of a run: a slow
// Pushgateway must not hold up the job or its shutdown.
const pushTimeout = 5 * time.Second

func (c *cli) pushMetrics(ctx context.Context, sum runSummary, res report.Result, started time.Time, ok bool, opts report.RunOptions) {
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

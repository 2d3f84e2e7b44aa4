package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/job"
)

// defaultGrace is how long `schedule` lets a run in progress finish its
// current period after SIGTERM/SIGINT before it abandons it. With the
// metrics push after it (at most pushTimeout) it stays inside Kubernetes'
// default 30 s terminationGracePeriodSeconds.
const defaultGrace = 20 * time.Second

func cmdSchedule(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "schedule")
	grace := fs.Duration("grace", defaultGrace, "after SIGTERM/SIGINT, how long the run in progress may take to finish its current period before it is abandoned (its checkpoint is then not moved)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return c.schedule(ctx, *grace)
}

// schedule runs the job on schedule.cron until ctx ends (SIGTERM/SIGINT),
// never two runs at once. Then it takes no new run, lets the run in
// progress finish its current period for up to grace, and returns nil.
func (c *cli) schedule(ctx context.Context, grace time.Duration) error {
	cfg := c.cfg
	logger := cronLogger{c.log}
	// cron.New installs neither wrapper, whatever its doc says: both are
	// named here. SkipIfStillRunning keeps runs from overlapping within
	// this process; the lease keeps them from overlapping across processes.
	cr := cron.New(
		cron.WithLocation(cfg.Schedule.Location),
		cron.WithLogger(logger),
		cron.WithChain(cron.Recover(logger), cron.SkipIfStillRunning(logger)),
	)
	// Runs get their own context: a signal stops them between periods
	// (stop), and cancels them only when the grace time is over.
	runCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	stop := make(chan struct{})
	var runs, failed atomic.Int64
	started := time.Now()
	if _, err := cr.AddFunc(cfg.Schedule.Cron, func() {
		select {
		case <-stop:
			return // a tick that fired as the signal came: no new run
		default:
		}
		rc := *c
		rc.runID = newRunID()
		rc.log = c.base.With(job.LogJob, cfg.JobName, job.LogRunID, rc.runID)
		// Errors are logged and in the summary line; the schedule goes on.
		sum, _ := rc.runOnce(runCtx, job.RunOptions{Stop: stop})
		runs.Add(1)
		if sum.Status == "failed" {
			failed.Add(1)
		}
	}); err != nil {
		return &config.Error{Key: "schedule.cron", Value: cfg.Schedule.Cron, Reason: err.Error()}
	}
	cr.Start()
	next := cr.Entries()[0].Next
	c.log.Info("schedule started", "cron", cfg.Schedule.Cron, "timezone", cfg.Schedule.Location.String(),
		"next_run", next.UTC().Format(time.RFC3339))

	<-ctx.Done()
	c.log.Info("signal received: taking no new runs", "grace", grace.String())
	close(stop)
	done := cr.Stop().Done()
	select {
	case <-done:
	case <-time.After(grace):
		c.log.Warn("grace time over: abandoning the run in progress (its period is not committed; the next run redoes it)")
		abandon()
		<-done
	}
	c.log.Info("schedule stopped")
	c.printJSON(map[string]any{"command": "schedule", "job": cfg.JobName, "status": "stopped",
		"runs": runs.Load(), "runs_failed": failed.Load(), "duration_ms": time.Since(started).Milliseconds()})
	return nil
}

// cronLogger sends robfig/cron's logs to slog.
type cronLogger struct{ log *slog.Logger }

// Info gets cron's chatter (wake, schedule, run) as debug lines, except
// "skip": a tick skipped because the previous run is still going.
func (l cronLogger) Info(msg string, kv ...any) {
	if msg == "skip" {
		l.log.Warn("previous run still in progress: this tick is skipped", kv...)
		return
	}
	l.log.Debug("cron: "+msg, kv...)
}
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error(fmt.Sprintf("cron: %s", msg), append(kv, "err", err)...)
}

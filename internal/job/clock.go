package job

import (
	"errors"
	"fmt"
	"time"
)

// The job has two clocks: the report clock (RunOptions.Now, `--now`),
// which decides which periods and rechecks are due, and the wall clock
// (Job.Clock, the host's), which the lease runs on. The report clock may be
// set in the past (replay, tests) but not ahead, on a run that writes:
// a period delivered before now >= end + lateness holds for real would be
// published before its items are in, and a recheck recorded at a read time
// after the real read would be marked done before its delay passed. This
// file is the one place that enforces it:
//   - checkClock refuses a run that writes (run, a backfill, verify
//     --repair) with a report clock more than MaxClockAhead ahead of the
//     wall clock; a dry run and status may look ahead.
//   - readTime is the read time a run records (a recheck's Read, a
//     restatement's At): never later than the wall clock.
//
// A wall clock that is itself ahead of real time cannot be told from here
// without an outside source: report.lateness and the rechecks
// (report.recheck_after) are what catch the items it delivered too early.

// MaxClockAhead is how far the report clock may be ahead of the wall clock
// on a run that writes: room for a `--now` computed on another host, or a
// scheduler's small skew, not for delivering a period early.
const MaxClockAhead = 5 * time.Minute

// ErrClockAhead is wrapped by the error of a run that writes with a report
// clock more than MaxClockAhead ahead of the wall clock.
var ErrClockAhead = errors.New("report clock ahead of the wall clock")

// checkClock refuses a run that writes (not opts.DryRun) whose report
// clock is more than MaxClockAhead ahead of the wall clock.
func (j *Job) checkClock(opts RunOptions) error {
	if opts.DryRun {
		return nil
	}
	wall := j.now()
	if ahead := opts.Now.Sub(wall); ahead > MaxClockAhead {
		return fmt.Errorf("%w: %s is %s ahead of the wall clock %s (at most %s): a run that writes would "+
			"deliver periods before their items are in and mark rechecks done before their delay passed; "+
			"only a dry run (run --dry-run, verify without --repair, status) may look ahead",
			ErrClockAhead, opts.Now.UTC().Format(time.RFC3339), ahead.Round(time.Second),
			wall.UTC().Format(time.RFC3339), MaxClockAhead)
	}
	return nil
}

// readTime is the time a read starting now is recorded at: the report
// clock, or the wall clock when that is earlier, so that a report clock
// ahead (within MaxClockAhead) never records a read later than it was.
func (r *runner) readTime() time.Time {
	if wall := r.j.now(); wall.Before(r.opts.Now) {
		return wall
	}
	return r.opts.Now
}

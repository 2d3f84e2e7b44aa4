package job_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/job"
)

// runAtWall runs j at report clock now with the wall clock set to wall.
func (e *env) runAtWall(owner string, wall, now time.Time) job.Result {
	e.t.Helper()
	e.clock.Add(wall.Sub(e.clock.Now()))
	return e.run(e.job(owner), job.RunOptions{Now: now})
}

// TestRecheckReadNotAfterWallClock: a report clock ahead of the wall clock
// (within job.MaxClockAhead) records a period's read at the wall clock, so
// that a recheck is not marked done before its delay (1h) passed for real;
// an item that lands after that read, before the delay, is still billed by
// the recheck.
func TestRecheckReadNotAfterWallClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deliverLate: the run ahead is the period's delivery; otherwise
		// it is its recheck.
		deliverLate bool
	}{
		{name: "delivery 4m ahead", deliverLate: true},
		{name: "recheck 4m ahead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, embeddedStack)
			e.put(purchase("tx-1", "a", 1000, at(0, 10)))
			want := int64(2)
			if !tc.deliverLate {
				e.runAtWall("A", at(1, 3), at(1, 3))
				e.put(purchase("tx-2", "a", 2000, at(0, 20)))
				want = 3
			}
			// Wall 01:57, report clock 02:01: the 1h delay after 01:00 has
			// not passed for real.
			e.runAtWall("B", at(1, 57), at(2, 1))
			if st := e.state(); len(st.Rechecks) != 1 || st.Rechecks[0].Read.After(at(1, 57)) {
				t.Errorf("after the run at wall 01:57, report clock 02:01: rechecks %+v, want hour 0 owed, read at 01:57", st.Rechecks)
			}
			// A late item lands at 01:58, before the delay passed.
			e.put(purchase("tx-late", "a", 4000, at(0, 30)))
			e.runAtWall("C", at(2, 5), at(2, 5))
			if m := e.manifest(hour(0)); m.Transactions != want {
				t.Errorf("hour 0 bills %d transactions (revision %d), want %d: the item that landed before the recheck delay passed was missed",
					m.Transactions, m.Revision, want)
			}
			e.checkSink()
		})
	}
}

// TestRunRefusesClockAhead: a run that writes (run, backfill, verify
// --repair) with a report clock more than job.MaxClockAhead ahead of the
// wall clock fails with job.ErrClockAhead and writes nothing; a dry run
// may look ahead.
func TestRunRefusesClockAhead(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("tx-1", "a", 1000, at(0, 10)))
	e.clock.Add(at(1, 0).Sub(e.clock.Now()))
	ahead := at(1, 0).Add(job.MaxClockAhead + time.Second)
	ctx := context.Background()
	for name, run := range map[string]func() error{
		"run": func() error {
			_, err := e.job("A").Run(ctx, job.RunOptions{Now: ahead})
			return err
		},
		"backfill": func() error {
			_, err := e.job("A").Run(ctx, job.RunOptions{Now: ahead, Backfill: true, From: at(0, 0), To: at(1, 0)})
			return err
		},
		"verify --repair": func() error {
			_, err := e.job("A").Verify(ctx, job.VerifyOptions{Now: ahead, From: at(0, 0), To: at(1, 0), Repair: true})
			return err
		},
	} {
		if err := run(); !errors.Is(err, job.ErrClockAhead) {
			t.Errorf("%s with the report clock %s ahead: %v, want ErrClockAhead", name, job.MaxClockAhead+time.Second, err)
		}
	}
	if objs := e.objects(); len(objs) != 0 {
		t.Fatalf("refused runs wrote %d object(s)", len(objs))
	}
	if res := e.run(e.job("A"), job.RunOptions{Now: ahead, DryRun: true}); len(res.Periods) != 1 {
		t.Errorf("dry run ahead built %d periods, want 1", len(res.Periods))
	}
	if res := e.run(e.job("A"), job.RunOptions{Now: at(1, 0).Add(job.MaxClockAhead)}); len(res.Periods) != 1 {
		t.Errorf("run at the tolerance delivered %d periods, want 1", len(res.Periods))
	}
}

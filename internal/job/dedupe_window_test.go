package job_test

import (
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

const day = 24 * time.Hour

// billed returns the transactions and across-period duplicates of the
// latest manifest of each period.
func (e *env) billed(ps ...report.Period) (tx, dups []int64) {
	e.t.Helper()
	for _, p := range ps {
		m := e.manifest(p)
		tx = append(tx, m.Transactions)
		dups = append(dups, m.DuplicatesAcrossPeriods)
	}
	return tx, dups
}

// TestDedupeWindowRaised: raising report.dedupe_window protects the claims
// already written (SPEC section 6): the window in force at look-up
// decides, not the one the claim was written with.
func TestDedupeWindowRaised(t *testing.T) {
	for _, tc := range []struct {
		name          string
		period        time.Duration
		before, after time.Duration
		retry         time.Duration // from the original's period start
	}{
		{"1d to 3d, retry the next hour", time.Hour, 1 * day, 3 * day, time.Hour},
		{"35d to 60d, retry 11 days later", day, 35 * day, 60 * day, 11 * day},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s stack) {
				e := newEnv(t, s)
				first := report.Period{Start: day0, End: day0.Add(tc.period)}
				retry := report.Period{Start: day0.Add(tc.retry), End: day0.Add(tc.retry + tc.period)}
				e.put(purchase("order-1", "a", 10000, first.Start.Add(10*time.Minute)))
				j := e.job("A")
				j.Period, j.DedupeWindow, j.MaxPeriods = tc.period, tc.before, 1000
				e.run(j, job.RunOptions{Now: first.End.Add(3 * time.Minute)})

				// The identical retry, re-stamped into a later period,
				// after the window was raised.
				e.put(purchase("order-1", "a", 10000, retry.Start.Add(10*time.Minute)))
				j = e.job("B")
				j.Period, j.DedupeWindow, j.MaxPeriods = tc.period, tc.after, 1000
				now := retry.End.Add(3 * time.Minute)
				if wall := e.clock.Now(); now.After(wall) { // the days passed for real
					e.clock.Add(now.Sub(wall))
				}
				e.run(j, job.RunOptions{Now: now})

				tx, dups := e.billed(first, retry)
				if tx[0] != 1 || tx[1] != 0 || dups[1] != 1 {
					t.Errorf("billed %v (duplicates across periods %v), want [1 0] ([0 1]): the retry is billed twice", tx, dups)
				}
				e.checkSink()
			})
		})
	}
}

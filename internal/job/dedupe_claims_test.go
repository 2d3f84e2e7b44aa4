package job_test

import (
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestDedupeCopyOutsideWindowKeepsFirstBilling: a copy billed by a period
// outside the window takes the claim; a later restatement of the period
// that billed the transaction first keeps it there (SPEC section 3): the
// claim of a later period counts only within the window too.
func TestDedupeCopyOutsideWindowKeepsFirstBilling(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		daily := func(d int) report.Period {
			return report.Period{Start: day0.Add(time.Duration(d) * day), End: day0.Add(time.Duration(d+1) * day)}
		}
		newJob := func(owner string) *job.Job {
			j := e.job(owner)
			j.Period, j.DedupeWindow = day, day
			return j
		}
		e.put(purchase("order-1", "a", 10000, daily(0).Start.Add(time.Hour)))
		e.run(newJob("A"), job.RunOptions{Now: daily(0).End.Add(3 * time.Minute)})

		// The same transaction three days later (outside the 1d window,
		// so billed again), and a late item of day 0: its recheck
		// restates day 0.
		e.put(purchase("order-1", "a", 10000, daily(3).Start.Add(time.Hour)),
			purchase("order-2", "a", 500, daily(0).Start.Add(2*time.Hour)))
		e.run(newJob("B"), job.RunOptions{Now: daily(3).End.Add(3 * time.Minute)})

		m0 := e.manifest(daily(0))
		if m0.Revision != 2 || m0.Transactions != 2 || m0.DuplicatesAcrossPeriods != 0 {
			t.Errorf("day 0 revision %d bills %d transactions (%d dropped as billed elsewhere), want revision 2 with order-1 and order-2",
				m0.Revision, m0.Transactions, m0.DuplicatesAcrossPeriods)
		}
		if m3 := e.manifest(daily(3)); m3.Transactions != 1 {
			t.Errorf("day 3 bills %d transactions, want order-1 (outside the window)", m3.Transactions)
		}
		// A backfill of both keeps each where it is.
		e.run(newJob("C"), job.RunOptions{Now: daily(3).End.Add(time.Hour), Backfill: true, From: daily(0).Start, To: daily(4).Start})
		if m0b := e.manifest(daily(0)); m0b.Revision != 2 || m0b.Transactions != 2 {
			t.Errorf("after a backfill day 0 is revision %d with %d transactions, want revision 2 with 2", m0b.Revision, m0b.Transactions)
		}
		e.checkSink()
	})
}

// TestDedupeSweepClockAhead: a run whose report clock is far ahead (a host
// clock ahead) does not sweep the claims of the embedded index that
// still count: the sweep goes by the period being built.
func TestDedupeSweepClockAhead(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("order-1", "a", 10000, at(0, 10)))
	e.run(e.job("A"), job.RunOptions{Now: at(6, 3)})
	// A backfill of a delivered empty hour with the host clock a year
	// ahead (a --now that far ahead of the wall clock is refused).
	e.clock.Add(365 * 24 * time.Hour)
	e.run(e.job("B"), job.RunOptions{Now: at(365*24, 0), Backfill: true, From: at(5, 0), To: at(6, 0)})
	e.clock.Add(-365 * 24 * time.Hour)
	// The identical retry in the next hour to be delivered.
	e.put(purchase("order-1", "a", 10000, at(6, 10)))
	e.run(e.job("C"), job.RunOptions{Now: at(7, 3)})
	tx, dups := e.billed(hour(0), hour(6))
	if tx[0] != 1 || tx[1] != 0 || dups[1] != 1 {
		t.Errorf("billed %v (duplicates across periods %v), want [1 0] ([0 1]): the clock ahead swept the claim", tx, dups)
	}
}

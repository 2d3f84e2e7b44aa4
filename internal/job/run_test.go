package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestRunDelivers: the due periods are published oldest first, the
// checkpoint follows, every object is listed by its period's manifest; a
// rerun finds nothing due, and a backfill of unchanged periods writes
// nothing.
func TestRunDelivers(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		n := e.putHourly(at(0, 0), at(3, 0), 6)
		res := e.run(e.job("A"), job.RunOptions{Now: at(3, 2)})
		if len(res.Periods) != 3 || !res.Checkpoint.Equal(at(3, 0)) || !e.state().Checkpoint.Equal(at(3, 0)) {
			t.Fatalf("delivered %d periods, checkpoint %s", len(res.Periods), res.Checkpoint)
		}
		var billed int64
		for i, pr := range res.Periods {
			m := pr.Manifest
			if pr.Outcome != job.OutcomePublished || m.Revision != 1 || m.Reason != report.ReasonDelivery || !m.PeriodStart.Equal(at(i, 0)) {
				t.Errorf("period %d: %s revision %d (%s) of %s", i, pr.Outcome, m.Revision, m.Reason, m.PeriodStart)
			}
			billed += m.Transactions
		}
		if billed != int64(n) {
			t.Errorf("billed %d, want %d", billed, n)
		}
		e.checkSink()
		if got := e.keysUnder("period=20900301T0100Z/"); len(got) != 1+1+1+3*2 {
			t.Errorf("objects of 01:00: %q", got)
		}
		// 00:00 and 01:00 were read after end+1h by their delivery: only
		// 02:00 owes a recheck, at 04:00.
		if st := e.state(); len(st.Rechecks) != 1 || st.Rechecks[0].Start != at(2, 0) || !st.Rechecks[0].Read.Equal(at(3, 2)) {
			t.Errorf("rechecks %+v", st.Rechecks)
		}
		before := e.objects()
		e.drv.takePuts()
		if res := e.run(e.job("B"), job.RunOptions{Now: at(3, 30)}); len(res.Periods) != 0 || len(res.Rechecks) != 0 {
			t.Errorf("second run did %d periods, %d rechecks", len(res.Periods), len(res.Rechecks))
		}
		res = e.run(e.job("C"), job.RunOptions{Now: at(3, 30), Backfill: true, From: at(0, 0), To: at(3, 0)})
		for _, pr := range res.Periods {
			if pr.Outcome != job.OutcomeUnchanged || pr.Manifest.Revision != 1 {
				t.Errorf("backfill of %s: %s revision %d", pr.Period.Name(), pr.Outcome, pr.Manifest.Revision)
			}
		}
		if puts := e.drv.takePuts(); len(puts) != 0 {
			t.Errorf("rerun and backfill of unchanged periods wrote %q", puts)
		}
		if after := e.objects(); !mapsEqual(before, after) {
			t.Error("objects changed")
		}
		if !e.state().Checkpoint.Equal(at(3, 0)) {
			t.Error("backfill moved the checkpoint")
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRunDedupeAcrossPeriods: a producer retry re-stamped into the next
// period is billed once, also when both periods are delivered by one run.
func TestRunDedupeAcrossPeriods(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("order-1", "a", 500, at(0, 59)), purchase("order-1", "a", 500, at(1, 1)),
		purchase("order-2", "a", 700, at(0, 10)), purchase("order-2", "a", 999, at(1, 10)))
	res := e.run(e.job("A"), job.RunOptions{Now: at(2, 2)})
	m0, m1 := res.Periods[0].Manifest, res.Periods[1].Manifest
	if m0.Transactions != 2 || m1.Transactions != 0 || m1.DuplicatesAcrossPeriods != 1 || m1.Rejects != 1 {
		t.Fatalf("00:00 billed %d; 01:00 billed %d, dropped %d, rejected %d", m0.Transactions, m1.Transactions,
			m1.DuplicatesAcrossPeriods, m1.Rejects)
	}
	rejects := e.keysUnder("rejects/period=20900301T0100Z/")
	if len(rejects) != 1 || !strings.Contains(e.read(rejects[0]), "already billed in period 20900301T0000Z with different content") {
		t.Errorf("rejects of 01:00: %q", rejects)
	}
	e.checkSink()
}

// TestRunCatchUp: after a day of downtime, runs deliver the due periods
// oldest first, at most MaxPeriods each, and say how many remain.
func TestRunCatchUp(t *testing.T) {
	e := newEnv(t, embeddedStack)
	want := e.putHourly(at(0, 0), at(24, 0), 2)
	var runs []int
	var billed int64
	next := at(0, 0)
	for i := range 10 {
		j := e.job(fmt.Sprintf("run-%d", i))
		j.MaxPeriods = 5
		j.RecheckAfter = nil
		res := e.run(j, job.RunOptions{Now: at(24, 2)})
		if len(res.Periods) == 0 {
			break
		}
		runs = append(runs, len(res.Periods))
		for _, pr := range res.Periods {
			if !pr.Period.Start.Equal(next) {
				t.Fatalf("run %d delivered %s, want %s", i, pr.Period.Name(), next)
			}
			billed += pr.Manifest.Transactions
			next = pr.Period.End
		}
		if left := int(at(24, 0).Sub(next) / time.Hour); res.PeriodsRemaining != left {
			t.Errorf("run %d: %d remaining, want %d", i, res.PeriodsRemaining, left)
		}
	}
	if fmt.Sprint(runs) != "[5 5 5 5 4]" || billed != int64(want) {
		t.Errorf("periods per run %v, billed %d of %d", runs, billed, want)
	}
	e.checkSink()
}

// TestRunStop: closing Stop ends the run after the period in progress,
// which is committed; the rest are counted as remaining.
func TestRunStop(t *testing.T) {
	e := newEnv(t, embeddedStack)
	stop := make(chan struct{})
	res := e.run(e.job("A"), job.RunOptions{Now: at(6, 2), Stop: stop, Progress: func(i, n int, what string, p report.Period) {
		if i == 1 {
			close(stop)
		}
	}})
	if len(res.Periods) != 2 || !res.Checkpoint.Equal(at(2, 0)) || res.PeriodsRemaining != 4 {
		t.Fatalf("delivered %d, checkpoint %s, %d remaining; want 2, 02:00, 4", len(res.Periods), res.Checkpoint, res.PeriodsRemaining)
	}
	if st := e.state(); st.Lease.Held(e.clock.Now()) {
		t.Error("lease not released")
	}
}

// TestRunCountsStartClose (issue 34, F4): a run stopped after its last
// period skips its close; the next run, with nothing due, publishes the
// month at its start, and its result counts that close.
func TestRunCountsStartClose(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(3, 0), 3)
	stop := make(chan struct{})
	res := e.run(e.job("A"), job.RunOptions{Now: at(3, 2), Stop: stop, Progress: func(i, n int, what string, p report.Period) {
		if i == n-1 {
			close(stop)
		}
	}})
	if len(res.Periods) != 3 || len(res.Statements.Months) != 0 {
		t.Fatalf("stopped run: %d periods, statements %+v; want 3 and no close", len(res.Periods), res.Statements)
	}
	res = e.run(e.job("B"), job.RunOptions{Now: at(3, 2)})
	if len(res.Periods) != 0 || len(res.Statements.Months) != 1 || res.Statements.Uploaded() == 0 {
		t.Fatalf("next run: %d periods, statements %+v; want none and the month published at its start", len(res.Periods), res.Statements)
	}
	if res = e.run(e.job("C"), job.RunOptions{Now: at(3, 2)}); len(res.Statements.Months) != 0 {
		t.Errorf("a third run published %+v again", res.Statements)
	}
}

// TestRunLeaseHeld: a run that finds the lease held writes nothing.
func TestRunLeaseHeld(t *testing.T) {
	e := newEnv(t, embeddedStack)
	if _, err := e.st.Acquire(context.Background(), jobName, "other", e.clock.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []job.RunOptions{{Now: at(3, 2)}, {Now: at(3, 2), Backfill: true, From: at(0, 0), To: at(2, 0)}} {
		_, err := e.job("A").Run(context.Background(), opts)
		var held *checkpoint.HeldError
		if !errors.As(err, &held) || held.Owner != "other" {
			t.Errorf("Run = %v, want a HeldError naming other", err)
		}
	}
	if objs := e.objects(); len(objs) != 0 {
		t.Errorf("wrote %d objects", len(objs))
	}
}

// TestRunDryRun: a dry run builds, lists and writes nothing.
func TestRunDryRun(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(2, 0), 3)
	res := e.run(e.job("A"), job.RunOptions{Now: at(2, 2), DryRun: true})
	if len(res.Periods) != 2 || res.Periods[0].Outcome != job.OutcomeDryRun || len(res.Periods[0].Uploaded) == 0 {
		t.Fatalf("dry run: %+v", res.Periods)
	}
	if objs := e.objects(); len(objs) != 0 {
		t.Errorf("dry run wrote %v", objs)
	}
	st := e.state()
	if !st.Checkpoint.IsZero() || st.Lease.Owner != "" {
		t.Errorf("dry run state %+v", st)
	}
	claims, _ := e.st.Lookup(context.Background(), jobName, []string{"tx-0000-0"})
	if len(e.keysUnder("")) != 0 {
		t.Fail()
	}
	if len(claims) != 0 {
		t.Errorf("dry run wrote claims %+v", claims)
	}
}

// TestRunPeriodFailureLeavesNoManifest: an upload that fails stops the
// period before its manifest; the checkpoint stays; the next run delivers
// it, bills each transaction once, and leaves no unlisted object.
func TestRunPeriodFailureLeavesNoManifest(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		e.putHourly(at(0, 0), at(2, 0), 9)
		// The retry of one 01:00 transaction, re-stamped into 00:00's
		// neighbour: billed in 00:00 only, whatever the crash.
		e.put(purchase("tx-0000-0", "a-0", 1999, at(1, 30)))
		boom := errors.New("injected: upload failed")
		e.drv.setFail(func(key string) error {
			if strings.HasPrefix(key, "transactions/period=20900301T0100Z/") {
				return boom
			}
			return nil
		})
		_, err := e.job("A").Run(context.Background(), job.RunOptions{Now: at(2, 2)})
		if !errors.Is(err, boom) {
			t.Fatalf("run = %v, want the injected failure", err)
		}
		if !e.state().Checkpoint.Equal(at(1, 0)) {
			t.Errorf("checkpoint %s, want 01:00", e.state().Checkpoint)
		}
		if got := e.keysUnder("manifests/period=20900301T0100Z/manifest.json"); len(got) != 0 {
			t.Errorf("manifest of the failed period: %v", got)
		}
		e.drv.setFail(nil)
		res := e.run(e.job("B"), job.RunOptions{Now: at(2, 2)})
		if len(res.Periods) != 1 || res.Periods[0].Manifest.Transactions != 9 || res.Periods[0].Manifest.DuplicatesAcrossPeriods != 1 {
			t.Fatalf("rerun: %+v", res.Periods)
		}
		e.checkSink()
	})
}

// TestRunScratchRemoved: the run's temp folder is gone after a run.
func TestRunScratchRemoved(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(1, 0), 3)
	e.run(e.job("A"), job.RunOptions{Now: at(1, 2)})
	if entries := osReadDir(t, e.tempDir); len(entries) != 0 {
		t.Errorf("temp folder holds %v after a run", entries)
	}
}

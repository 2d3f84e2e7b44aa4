package job_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestRecheckRestates: items written into a delivered period by a producer
// that is not our ingest (straight into the store) are found by the
// recheck an hour after the period's end: the period is restated as
// revision 2, its adjustments are exactly the late items, no object of
// revision 1 remains, and the recheck is done. A recheck of an unchanged
// period writes nothing.
func TestRecheckRestates(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		e.put(purchase("t-1", "acme", 1000, at(10, 5)), purchase("t-2", "zeta", 2000, at(10, 6)))
		e.put(purchase("t-3", "acme", 3000, at(11, 5)))
		res := e.run(e.job("A"), job.RunOptions{Now: at(11, 2)})
		if len(res.Periods) != 11 { // 00:00 .. 10:00
			t.Fatalf("delivered %d periods", len(res.Periods))
		}
		rev1 := e.objects()
		// Late items: a producer whose clock was behind, and a retry queue.
		e.put(purchase("t-late-1", "acme", 250, at(10, 59)), purchase("t-late-2", "newco", 1, at(10, 30)))
		// 11:30: nothing due (11:00 at 12:02; 10:00's recheck at 12:00).
		if res := e.run(e.job("B"), job.RunOptions{Now: at(11, 30)}); len(res.Periods)+len(res.Rechecks) != 0 {
			t.Fatalf("11:30: %d periods, %d rechecks", len(res.Periods), len(res.Rechecks))
		}
		e.drv.takePuts()
		res = e.run(e.job("C"), job.RunOptions{Now: at(12, 2)})
		var rechecked []string
		for _, pr := range res.Rechecks {
			rechecked = append(rechecked, pr.Period.Name())
		}
		if len(res.Periods) != 1 || len(res.Rechecks) != 1 || res.RechecksRemaining != 0 {
			t.Fatalf("12:02: delivered %d, rechecked %v, %d remaining", len(res.Periods), rechecked, res.RechecksRemaining)
		}
		var restated []job.PeriodResult
		for _, pr := range res.Rechecks {
			if pr.Restated() {
				restated = append(restated, pr)
			} else if pr.Outcome != job.OutcomeUnchanged {
				t.Errorf("recheck of %s: %s", pr.Period.Name(), pr.Outcome)
			}
		}
		if len(restated) != 1 || restated[0].Period != hour(10) {
			t.Fatalf("restated %v", restated)
		}
		m := e.manifest(hour(10))
		if m.Revision != 2 || m.Reason != report.ReasonRecheck || m.ItemsRead != 4 || m.Transactions != 4 ||
			m.PreviousSHA256 == "" || len(m.ReplacedFiles) == 0 {
			t.Errorf("revision 2 manifest: %+v", m)
		}
		// The only writes were 10:00's and 11:00's.
		for _, key := range e.drv.takePuts() {
			if !strings.Contains(key, "period=20900301T1000Z/") && !strings.Contains(key, "period=20900301T1100Z/") && !report.IsStatementKey(key) {
				t.Errorf("wrote %s", key)
			}
		}
		// Adjustments: exactly the late items, per agency.
		adj := e.keysUnder("adjustments/period=20900301T1000Z/")
		if len(adj) != 1 {
			t.Fatalf("adjustments objects %q", adj)
		}
		rows := map[string][]string{}
		for _, key := range e.keysUnder("period=20900301T1000Z/adjustments-") {
			if !strings.HasSuffix(key, ".csv") {
				continue
			}
			recs, err := csv.NewReader(strings.NewReader(e.read(key))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs[1:] {
				rows[r[2]] = r
			}
		}
		// agency, currency, purchases, refunds, gross, refunds, net, commission, revision
		want := map[string]string{
			"acme":  "acme,USD,1,0,2.50,0.00,2.50,0.25,2",
			"newco": "newco,USD,1,0,0.01,0.00,0.01,0.00,2",
		}
		if len(rows) != len(want) {
			t.Errorf("adjustment rows %v", rows)
		}
		for a, w := range want {
			if got := strings.Join(rows[a][2:], ","); got != w {
				t.Errorf("adjustments of %s: %s, want %s", a, got, w)
			}
		}
		e.checkSink()
		for key := range rev1 {
			if strings.Contains(key, "summary/period=20900301T1000Z/") {
				if _, ok := e.objects()[key]; ok {
					t.Errorf("revision 1's %s still there", key)
				}
			}
		}
		st := e.state()
		if len(st.Restated) != 1 || st.Restated[0].Revision != 2 || st.Restated[0].ItemsBefore != 2 || st.Restated[0].ItemsAfter != 4 {
			t.Errorf("restated %+v", st.Restated)
		}
		for _, rc := range st.Rechecks {
			if !rc.Start.Equal(at(11, 0)) {
				t.Errorf("recheck still owed for %s", rc.Start)
			}
		}
		// Once done, a period is not re-read again; a recheck of an
		// unchanged period writes nothing.
		e.drv.takePuts()
		res = e.run(e.job("D"), job.RunOptions{Now: at(13, 0)})
		if puts := e.drv.takePuts(); len(puts) != 0 {
			t.Errorf("recheck of an unchanged period wrote %q", puts)
		}
		if len(res.Rechecks) != 1 || res.Rechecks[0].Period != hour(11) || res.Rechecks[0].Outcome != job.OutcomeUnchanged {
			t.Errorf("13:00 rechecks %+v", res.Rechecks)
		}
		if len(e.state().Rechecks) != 0 {
			t.Errorf("rechecks left %+v", e.state().Rechecks)
		}
	})
}

// TestRecheckBound: after an outage, a run does at most MaxPeriods
// rechecks, oldest first, and counts the rest; periods it delivers late
// owe none.
func TestRecheckBound(t *testing.T) {
	e := newEnv(t, embeddedStack)
	for h := 1; h <= 6; h++ { // on time: each period read at end+2m, owes a recheck
		e.run(e.job("A"), job.RunOptions{Now: at(h, 2)})
	}
	if n := len(e.state().Rechecks); n != 1 {
		// Each run also did the rechecks due by then: only 05:00's is left.
		t.Fatalf("%d rechecks owed, want 1", n)
	}
	e.run(e.job("B"), job.RunOptions{Now: at(7, 2)}) // 06:00 delivered; 05:00 rechecked
	// Down until 20:00: 07:00..18:00 are delivered late (no recheck owed);
	// 06:00's recheck (due 08:00) is done.
	j := e.job("C")
	j.MaxPeriods = 20
	res := e.run(j, job.RunOptions{Now: at(20, 0)})
	if len(res.Periods) != 12 || len(res.Rechecks) != 1 || len(e.state().Rechecks) != 0 {
		t.Fatalf("after the outage: %d periods, %d rechecks, %d owed", len(res.Periods), len(res.Rechecks), len(e.state().Rechecks))
	}
	// Rechecks owed by many periods, then an outage: bounded per run.
	for h := 21; h <= 26; h++ {
		j := e.job("D")
		j.RecheckAfter = []time.Duration{24 * time.Hour}
		e.run(j, job.RunOptions{Now: at(h, 2)}) // 19:00..01:00 next day, each owing a 24h recheck
	}
	j = e.job("E")
	j.RecheckAfter = []time.Duration{24 * time.Hour}
	j.MaxPeriods = 4
	res = e.run(j, job.RunOptions{Now: at(60, 0)})
	if len(res.Rechecks) != 4 || res.RechecksRemaining != 3 || res.Rechecks[0].Period != hour(19) {
		t.Errorf("bounded: %d rechecks from %v, %d remaining; want 4 from 19:00, 3", len(res.Rechecks), res.Rechecks[0].Period, res.RechecksRemaining)
	}
}

// TestRecheckFailureIsolated: one delivered period whose summary cannot be
// read back (corrupt in the sink) fails its recheck; the rechecks of the
// younger periods still run and restate them, the run reports the failure
// (an error wrapping job.ErrRecheckFailed, the period in
// Result.RechecksFailed), and the failed recheck stays owed: once the
// summary is restored, the next run restates that period too.
func TestRecheckFailureIsolated(t *testing.T) {
	e := newEnv(t, embeddedStack)
	day := func(owner string) *job.Job {
		j := e.job(owner)
		j.RecheckAfter = []time.Duration{24 * time.Hour}
		return j
	}
	for h := range 3 {
		e.put(purchase(fmt.Sprintf("t-%d", h), "acme", 1000, at(h, 5)))
		e.run(day("A"), job.RunOptions{Now: at(h+1, 2)}) // on time: owes a recheck at end+24h
	}
	for h := range 3 {
		e.put(purchase(fmt.Sprintf("t-late-%d", h), "acme", 250, at(h, 50)))
	}
	keys := e.keysUnder("summary/period=20900301T0000Z/")
	if len(keys) != 1 {
		t.Fatalf("summary of 00:00: %q", keys)
	}
	good := e.read(keys[0])
	e.write(keys[0], "not a parquet file")

	res, err := day("B").Run(context.Background(), job.RunOptions{Now: at(27, 0)})
	if !errors.Is(err, job.ErrRecheckFailed) || !strings.Contains(err.Error(), "20900301T0000Z") {
		t.Errorf("run: err %v, want ErrRecheckFailed naming 20900301T0000Z", err)
	}
	var restated []report.Period
	for _, pr := range res.Rechecks {
		if pr.Restated() {
			restated = append(restated, pr.Period)
		}
	}
	if !slices.Equal(restated, []report.Period{hour(1), hour(2)}) {
		t.Fatalf("restated %v, want 01:00 and 02:00", restated)
	}
	if len(res.RechecksFailed) != 1 || res.RechecksFailed[0].Period != hour(0) || res.RechecksFailed[0].Err == nil {
		t.Errorf("failed rechecks %+v, want 00:00", res.RechecksFailed)
	}
	if m := e.manifest(hour(0)); m.Revision != 1 {
		t.Errorf("00:00 at revision %d", m.Revision)
	}
	owed := false
	for _, rc := range e.state().Rechecks {
		owed = owed || rc.Start.Equal(at(0, 0))
	}
	if !owed {
		t.Fatalf("the failed recheck of 00:00 is no longer owed: %+v", e.state().Rechecks)
	}

	// Restored: the next run retries it.
	e.write(keys[0], good)
	res = e.run(day("C"), job.RunOptions{Now: at(27, 30)})
	if len(res.Rechecks) != 1 || res.Rechecks[0].Period != hour(0) || !res.Rechecks[0].Restated() || len(res.RechecksFailed) != 0 {
		t.Fatalf("retry: rechecks %+v, failed %+v", res.Rechecks, res.RechecksFailed)
	}
	if m := e.manifest(hour(0)); m.Revision != 2 || m.Transactions != 2 {
		t.Errorf("00:00 after the retry: revision %d, %d transactions", m.Revision, m.Transactions)
	}
	for _, rc := range e.state().Rechecks {
		if rc.Start.Equal(at(0, 0)) {
			t.Errorf("00:00 still owed after its recheck")
		}
	}
	e.checkSink()
}

package job_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// Issue 15 point 5: verify --repair takes its periods from the job's grid
// (report.Grid): nothing before report.start or the first delivered
// period, each delivered period on the grid it was delivered with.

// delivered returns each manifest in the sink as "HHMM+len" and the sum
// of its transactions.
func (e *env) delivered() (periods []string, transactions int64) {
	e.t.Helper()
	for _, key := range e.keysUnder("/manifest.json") {
		if report.IsStatementKey(key) {
			continue
		}
		m, err := report.ParseManifest([]byte(e.read(key)))
		if err != nil {
			e.t.Fatal(err)
		}
		p := m.Period()
		periods = append(periods, p.Start.Format("02T1504")+"+"+report.FormatDuration(p.End.Sub(p.Start)))
		transactions += m.Transactions
	}
	return periods, transactions
}

func (e *env) verify(j *job.Job, o job.VerifyOptions) []job.PeriodCheck {
	e.t.Helper()
	checks, err := j.Verify(context.Background(), o)
	if err != nil {
		e.t.Fatalf("verify (repair %v): %v", o.Repair, err)
	}
	return checks
}

func differences(checks []job.PeriodCheck) []string {
	var out []string
	for _, c := range checks {
		if c.Differs {
			out = append(out, fmt.Sprintf("%s %s %s", c.Period, c.Status, c.Repaired))
		}
	}
	return out
}

// TestVerifyRepairNothingBeforeStart: the daily `verify --last 3d
// --repair` of a job that went live a day ago publishes no period before
// report.start and bills no item from before it.
func TestVerifyRepairNothingBeforeStart(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		golive := at(24, 0)
		e.put(purchase("before-golive", "a-0", 1000, at(10, 5)))
		e.put(purchase("after-golive", "a-0", 2000, at(25, 5)))
		j := e.job("A")
		j.Start, j.RecheckAfter = golive, nil
		e.run(j, job.RunOptions{Now: at(27, 5)})

		for _, repair := range []bool{true, false} {
			v := e.job("V")
			v.Start = golive
			checks := e.verify(v, job.VerifyOptions{Last: 72 * time.Hour, Repair: repair, Now: at(27, 30)})
			if d := differences(checks); len(d) > 0 {
				t.Fatalf("verify --last 3d (repair %v): differences %v", repair, d)
			}
			if len(checks) != 3 || !checks[0].Period.Start.Equal(golive) {
				t.Fatalf("verify --last 3d checked %d periods from %v, want the 3 from report.start", len(checks), checks[0].Period)
			}
		}
		periods, tx := e.delivered()
		if len(periods) != 3 || tx != 1 {
			t.Fatalf("sink holds %v with %d transactions, want 3 periods from report.start and 1 transaction", periods, tx)
		}
		e.checkSink()
	})
}

// TestPeriodChange: report.period changed on a running job, both ways;
// the delivered periods keep their grid, the new one starts at a boundary
// both share, verify --repair finds nothing and every transaction is billed
// exactly once (dedupe_window 0: nothing else would catch a double).
func TestPeriodChange(t *testing.T) {
	tests := []struct {
		name           string
		before, after  time.Duration
		firstRun       time.Time // its checkpoint is where the change happens
		wantCheckpoint time.Time
		want           string
	}{
		{"1h to 15m", time.Hour, 15 * time.Minute, at(2, 5), at(2, 0),
			"01T0000+1h 01T0100+1h 01T0200+15m 01T0215+15m 01T0230+15m 01T0245+15m 01T0300+15m 01T0315+15m 01T0330+15m 01T0345+15m"},
		{"15m to 1h", 15 * time.Minute, time.Hour, at(1, 20), at(1, 15),
			"01T0000+15m 01T0015+15m 01T0030+15m 01T0045+15m 01T0100+15m 01T0115+15m 01T0130+15m 01T0145+15m 01T0200+1h 01T0300+1h"},
		{"2h to 3h", 2 * time.Hour, 3 * time.Hour, at(2, 5), at(2, 0),
			"01T0000+2h 01T0200+2h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s stack) {
				e := newEnv(t, s)
				n := e.putHourly(at(0, 0), at(4, 0), 4)
				j := e.job("A")
				j.Period, j.DedupeWindow, j.RecheckAfter = tc.before, 0, nil
				if res := e.run(j, job.RunOptions{Now: tc.firstRun}); !res.Checkpoint.Equal(tc.wantCheckpoint) {
					t.Fatalf("first run: checkpoint %v, want %v", res.Checkpoint, tc.wantCheckpoint)
				}
				j = e.job("B")
				j.Period, j.DedupeWindow, j.RecheckAfter = tc.after, 0, nil
				e.run(j, job.RunOptions{Now: at(4, 5)})
				periods, tx := e.delivered()
				if got := strings.Join(periods, " "); got != tc.want {
					t.Fatalf("delivered %s\nwant      %s", got, tc.want)
				}
				for _, repair := range []bool{true, false} {
					v := e.job("V")
					v.Period, v.DedupeWindow = tc.after, 0
					checks := e.verify(v, job.VerifyOptions{From: at(0, 0), To: at(2, 0), Repair: repair, Now: at(4, 30)})
					checks = append(checks, e.verify(v, job.VerifyOptions{Last: 72 * time.Hour, Repair: repair, Now: at(4, 30)})...)
					if d := differences(checks); len(d) > 0 {
						t.Fatalf("verify (repair %v) after the change: %v", repair, d)
					}
				}
				if after, tx2 := e.delivered(); tx2 != tx || int(tx) != n || len(after) != len(periods) {
					t.Fatalf("after verify --repair: %d periods, %d transactions; want %d, %d", len(after), tx2, len(periods), n)
				}
				e.checkSink()
			})
		})
	}
}

// TestGridInferredForOlderState: a state written before grids were
// recorded (a checkpoint, no grid) gets its grid from the manifests in the
// sink, once, written by the first run that holds the lease; verify
// --repair then finds nothing, also after invented manifests of the old
// verify --repair before report.start.
func TestGridInferredForOlderState(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(4, 0), 4)
	j := e.job("A")
	j.DedupeWindow, j.RecheckAfter = 0, nil
	e.run(j, job.RunOptions{Now: at(2, 5)})
	j = e.job("B")
	j.Period, j.DedupeWindow, j.RecheckAfter = 15*time.Minute, 0, nil
	e.run(j, job.RunOptions{Now: at(4, 5)})
	want := e.state().Grid
	// As an earlier version left it: no grid.
	l, err := e.st.Acquire(context.Background(), jobName, "old", e.clock.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Update(context.Background(), jobName, l, e.clock.Now(), checkpoint.Update{Grid: []checkpoint.Epoch{}}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Release(context.Background(), jobName, l); err != nil {
		t.Fatal(err)
	}
	if g := e.state().Grid; len(g) != 0 {
		t.Fatalf("grid not cleared: %v", g)
	}
	v := e.job("V")
	v.Period, v.DedupeWindow = 15*time.Minute, 0
	checks := e.verify(v, job.VerifyOptions{From: at(0, 0), To: at(4, 0), Repair: true, Now: at(4, 30)})
	if d := differences(checks); len(d) > 0 || len(checks) != 10 {
		t.Fatalf("verify --repair of an older state: %d periods, differences %v", len(checks), d)
	}
	got := e.state().Grid
	if len(got) != len(want) || len(got) != 2 {
		t.Fatalf("inferred grid %v, want %v", got, want)
	}
	for i := range got {
		if !got[i].From.Equal(want[i].From) || got[i].Period != want[i].Period {
			t.Fatalf("inferred grid %v, want %v", got, want)
		}
	}
}

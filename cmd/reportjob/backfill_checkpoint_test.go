//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// Every published period is counted by a statement, and none makes a later
// report.period change fail (issue 31, point 1; SPEC section 7).
//
// Daily periods from 2026-01-07, statements in UTC; one item on 01-09. A
// run at 01-10T00:00Z delivers 01-07 and 01-08 (01-09 is not due yet):
// checkpoint 01-09.
//
//	TestBackfillPastCheckpoint: a backfill before the first delivery, and
//	  `run --backfill --from 01-07 --to 01-10`
//	  (and its --dry-run) past the checkpoint: refused, exit 2,
//	  nothing written; the message names --to and the checkpoint and says
//	  that run delivers the period after it. The run delivers 01-09 and
//	  January's statement counts it; a backfill within the checkpoint
//	  works; report.period 1h then runs and verifies clean.
//	TestPublishedPastCheckpointPeriodChange: the run that delivers 01-09
//	  is killed between its manifest and the checkpoint (after-manifest);
//	  report.period becomes 1h: the next run finishes 01-09 on the daily
//	  grid, then switches, and every statement check holds.
//
//	go test ./cmd/reportjob -run 'TestBackfillPastCheckpoint|TestPublishedPastCheckpointPeriodChange' -v

const bcTop = e2eCommissionYAML + "\nstatements: {timezone: UTC, agency_files: [csv]}"

func bcRunner(t *testing.T, backend string) *stRunner {
	t.Helper()
	h := procHarness(t, backend, harnessOptions{period: "24h", start: "2026-01-07", top: bcTop, extra: crashExtra(backend)})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-01-10T00:00:00Z",
		stTx{id: "b1", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-09T12:00:00Z"},
		stTx{id: "b0", agency: "acme", amount: "5.00", currency: "USD", at: "2026-01-08T12:00:00Z"})
	r.run("2026-01-10T00:00:00Z", map[string]any{"periods_processed": float64(2), "checkpoint": "2026-01-09T00:00:00Z"})
	return r
}

// setPeriod rewrites report.period in the harness's config.
func (r *stRunner) setPeriod(from, to string) {
	r.t.Helper()
	r.editConfig("period: "+from+"\n", "period: "+to+"\n")
}

// editConfig replaces the first old in the harness's config with new.
func (r *stRunner) editConfig(old, new string) {
	r.t.Helper()
	b, err := os.ReadFile(r.h.config)
	if err != nil {
		r.t.Fatal(err)
	}
	s := strings.Replace(string(b), old, new, 1)
	if s == string(b) {
		r.t.Fatalf("no %q in the config", old)
	}
	if err := os.WriteFile(r.h.config, []byte(s), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// wantPeriods checks the periods month m's manifest lists (their starts,
// RFC 3339, in order).
func (r *stRunner) wantPeriods(m string, want ...string) {
	r.t.Helper()
	var got []string
	for _, p := range r.monthManifest(m).Periods {
		got = append(got, p.Start.UTC().Format("2006-01-02T15:04Z"))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		r.t.Errorf("%s's statement lists the periods %v, want %v", m, got, want)
	}
}

func TestBackfillPastCheckpoint(t *testing.T) {
	// Before the first delivery, every backfill is run's work.
	first := &stRunner{t: t, h: procHarness(t, "embedded", harnessOptions{period: "24h", start: "2026-01-07", top: bcTop}), bin: procBinary(t)}
	first.cli(0, "init")
	sum, _ := first.cli(exitUsage, "run", "--backfill", "--from", "2026-01-07", "--to", "2026-01-09", "--now", "2026-01-10T00:05:00Z")
	if msg := fmt.Sprint(sum["error"]); !strings.Contains(msg, "--to 2026-01-09T00:00:00Z: no period is delivered yet") ||
		!strings.Contains(msg, "run delivers the periods from report.start (3 due") {
		t.Errorf("backfill before the first delivery: %v", sum)
	}
	if st := procState(first.h); !st.Checkpoint.IsZero() {
		t.Errorf("a refused backfill moved the checkpoint: %v", st.Checkpoint)
	}

	r := bcRunner(t, "embedded")
	before := r.h.objects()
	for _, dry := range []bool{false, true} {
		args := []string{"run", "--backfill", "--from", "2026-01-07", "--to", "2026-01-10", "--now", "2026-01-10T00:05:00Z"}
		if dry {
			args = append(args, "--dry-run")
		}
		sum, _ := r.cli(exitUsage, args...)
		msg := fmt.Sprint(sum["error"])
		for _, want := range []string{"--to 2026-01-10T00:00:00Z", "checkpoint 2026-01-09T00:00:00Z", "run delivers", "1 due"} {
			if !strings.Contains(msg, want) {
				t.Errorf("backfill past the checkpoint (dry run %v): the error %q does not say %q", dry, msg, want)
			}
		}
		if sum["status"] != "bad_usage" {
			t.Errorf("backfill past the checkpoint (dry run %v): %v", dry, sum)
		}
	}
	if after := r.h.objects(); !mapsEqual(before, after) {
		t.Errorf("a refused backfill changed the sink: %d objects, were %d", len(after), len(before))
	}
	r.check("refused backfill")
	r.run("2026-01-10T00:05:00Z", map[string]any{"periods_processed": float64(1), "checkpoint": "2026-01-10T00:00:00Z"})
	r.wantPeriods("2026-01", "2026-01-07T00:00Z", "2026-01-08T00:00Z", "2026-01-09T00:00Z")
	r.check("run")
	// Within the checkpoint, a backfill rebuilds delivered periods.
	r.cli(0, "run", "--backfill", "--from", "2026-01-07", "--to", "2026-01-10", "--now", "2026-01-10T00:05:00Z")
	r.check("backfill")
	r.setPeriod("24h", "1h")
	r.run("2026-01-10T02:05:00Z", map[string]any{"periods_processed": float64(2), "checkpoint": "2026-01-10T02:00:00Z"})
	r.cli(0, "verify", "--from", "2026-01-07", "--to", "2026-01-10T02:00:00Z", "--now", "2026-01-10T02:05:00Z")
	r.wantPeriods("2026-01", "2026-01-07T00:00Z", "2026-01-08T00:00Z", "2026-01-09T00:00Z", "2026-01-10T00:00Z", "2026-01-10T01:00Z")
	r.check("period 1h")
}

func TestPublishedPastCheckpointPeriodChangeEmbedded(t *testing.T) {
	testPublishedPastCheckpointPeriodChange(t, "embedded")
}

func TestPublishedPastCheckpointPeriodChangeAWS(t *testing.T) {
	testPublishedPastCheckpointPeriodChange(t, "aws")
}

func testPublishedPastCheckpointPeriodChange(t *testing.T, backend string) {
	r := bcRunner(t, backend)
	crash := procRun(t, r.bin, r.h, []string{crashpoint.EnvVar + "=after-manifest"}, "run", "--now", "2026-01-10T00:05:00Z")
	if !crash.killed {
		t.Fatalf("the run did not crash after the manifest of 01-09: %s", crash)
	}
	procWaitLease(r.h)
	r.setPeriod("24h", "1h")
	// The next run finishes 01-09 (its manifest is there) on the daily
	// grid, then delivers 01-10T00:00 and 01:00 on the hourly one.
	r.run("2026-01-10T02:05:00Z", map[string]any{"periods_processed": float64(3), "checkpoint": "2026-01-10T02:00:00Z"})
	r.cli(0, "verify", "--from", "2026-01-07", "--to", "2026-01-10T02:00:00Z", "--now", "2026-01-10T02:05:00Z")
	r.wantPeriods("2026-01", "2026-01-07T00:00Z", "2026-01-08T00:00Z", "2026-01-09T00:00Z", "2026-01-10T00:00Z", "2026-01-10T01:00Z")
	r.check("period 1h after a crash between the manifest and the checkpoint")
	_, lines := r.statement("2026-01")
	if l := lines["acme/USD"]; l.PurchaseCount != 2 || l.CommissionDue != "1.50" {
		t.Errorf("January's statement: %+v, want 2 purchases, 1.50 due", l)
	}
}

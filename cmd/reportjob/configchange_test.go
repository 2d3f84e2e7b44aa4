//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// The config-change matrix (SPEC section 6, "Changing the configuration
// of a running job"): through the built binary, on the embedded store with
// a folder sink and on DynamoDB Local with versitygw S3, one key changes
// between runs while late items and identical retries land across the
// change; then rechecks run (--now advanced), `verify --repair` and a
// `run --backfill` go over the change. Each case must end with every
// transaction billed exactly once at its rate, `verify` clean after one
// run on the new config, and no restatement that no item caused.
//
// The timeline (hourly periods from ccStart, yesterday's UTC midnight,
// unless the case changes report.period; every time named is on both
// grids' boundaries; hh:mm below is after ccStart). The dates are recent
// on purpose: the DynamoDB dedupe index has a TTL on the wall clock, which
// the server applies at its own pace; with 2024 dates the same case gave
// different billings from one run to the next on DynamoDB Local.
//
//	stage 0, config 0: items in 00:00..02:59; run --now 03:02 delivers up to 03:00
//	stage 1, config 1: items in 03:00..04:59; a late item in 02:35; a retry of a
//	         02:xx transaction re-stamped into 03:10; a retry of a 04:xx one
//	         re-stamped back into 02:50; run --now 05:02 delivers up to 05:00 and
//	         rechecks the periods owed one (02:00's), then verify must be clean
//	stage 2, config 2: items in 05:00..06:59; a late item in 01:30 that no
//	         recheck will see; a retry of a 00:xx transaction re-stamped into
//	         05:05; run --now 07:02; verify --repair over [00:00, 07:00) (finds
//	         the late item); run --backfill over the same range; verify clean.
//
//	go test ./cmd/reportjob -run 'TestConfigChange(Embedded|AWS)' -v

// ccCase is one config change of the matrix.
type ccCase struct {
	name string
	// edit[s] changes the config of stage s from the one before (stage 0
	// from ccDefault); nil keeps it.
	edit [3]func(*ccConfig)
	// rate is the commission (bps) a transaction first billed in stage s
	// must be billed at, forever after; nil: 1000.
	rate func(it ccItem, stage int) int
	// retriesBillAgain: after the change, identical retries in another
	// period are billed again (report.dedupe_window: 0, "within a period
	// only", is in force when they are looked up).
	retriesBillAgain bool
	// backfillRebuilds: the change alters the deliverables, which a
	// backfill applies to the periods it rebuilds ("a backfill applies
	// today's configuration"): it may publish revisions with reason
	// backfill, with the same totals.
	backfillRebuilds bool
	// firstDelivered: items before it are never billed (the first period
	// delivered; nothing before it is ever invented). Zero: ccStart.
	firstDelivered time.Time
}

var (
	ccStart = time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	// ccNow are the report clocks of the runs of stages 0, 1 and 2, and
	// ccCheckpoint where each leaves the checkpoint.
	ccNow        = [3]string{ccT(3, 2), ccT(5, 2), ccT(7, 2)}
	ccCheckpoint = [3]string{ccT(3, 0), ccT(5, 0), ccT(7, 0)}
	// ccRateFrom is the date the dated commission rate applies from.
	ccRateFrom = ccH(3)
)

// ccT is ccStart + h hours m minutes, in RFC 3339.
func ccT(h, m int) string {
	return ccStart.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute).Format(time.RFC3339)
}

func ccH(h int) time.Time { return ccStart.Add(time.Duration(h) * time.Hour) }

var ccCases = []ccCase{
	{name: "period_1h_to_15m", edit: [3]func(*ccConfig){nil, func(c *ccConfig) { c.period = "15m" }}},
	{name: "period_15m_to_1h", edit: [3]func(*ccConfig){func(c *ccConfig) { c.period = "15m" }, func(c *ccConfig) { c.period = "1h" }}},
	{name: "shards_1_to_4", edit: [3]func(*ccConfig){nil, func(c *ccConfig) { c.shards = 4 }}},
	{name: "shards_4_to_2", edit: [3]func(*ccConfig){func(c *ccConfig) { c.shards = 4 }, func(c *ccConfig) { c.shards = 2 }}},
	{name: "dedupe_window_1d_to_3d", edit: [3]func(*ccConfig){
		func(c *ccConfig) { c.dedupeWindow = "1d" }, func(c *ccConfig) { c.dedupeWindow = "3d" }}},
	{name: "dedupe_window_35d_to_0", retriesBillAgain: true, edit: [3]func(*ccConfig){
		nil, func(c *ccConfig) { c.dedupeWindow = "0" }}},
	// report.start moved past the checkpoint of a running job: the
	// checkpoint decides what is due; delivered periods stay delivered
	// (and a late item in one is still billed by verify --repair).
	{name: "start_moved_later", edit: [3]func(*ccConfig){nil, func(c *ccConfig) { c.start = ccT(4, 0) }}},
	// report.start moved before the first delivered period: the items
	// before go-live are never billed (no period is invented for them, by
	// a run, verify --repair or a backfill over them).
	{name: "start_moved_earlier", firstDelivered: ccH(2), edit: [3]func(*ccConfig){
		func(c *ccConfig) { c.start = ccT(2, 0) }, func(c *ccConfig) { c.start = ccT(0, 0) }}},
	{name: "agency_files_csv_to_csv_parquet_to_none", backfillRebuilds: true, edit: [3]func(*ccConfig){
		nil, func(c *ccConfig) { c.agencyFiles = "[csv, parquet]" }, func(c *ccConfig) { c.agencyFiles = "[]" }}},
	{name: "line_items_true_false_true", backfillRebuilds: true, edit: [3]func(*ccConfig){
		nil, func(c *ccConfig) { c.lineItems = false }, func(c *ccConfig) { c.lineItems = true }}},
	{name: "recheck_after_1h_to_1h_24h_to_none", edit: [3]func(*ccConfig){
		nil, func(c *ccConfig) { c.recheckAfter = "[1h, 24h]" }, func(c *ccConfig) { c.recheckAfter = "[]" }}},
	// A rate without a date applies from the start, to what is billed from
	// now on; what was billed stays billed at its rate.
	{name: "commission_1000_to_900_undated",
		edit: [3]func(*ccConfig){nil, func(c *ccConfig) { c.commission = "{default_bps: 900}" }},
		rate: func(_ ccItem, stage int) int {
			if stage == 0 {
				return 1000
			}
			return 900
		}},
	// A dated rate applies by the transaction's recorded_at.
	{name: "commission_dated_list",
		edit: [3]func(*ccConfig){nil, func(c *ccConfig) {
			c.commission = fmt.Sprintf("{default_bps: [{bps: 1000}, {bps: 900, from: %q}]}", ccRateFrom.Format(time.RFC3339))
		}},
		rate: func(it ccItem, _ int) int {
			if it.at.Before(ccRateFrom) {
				return 1000
			}
			return 900
		}},
}

func TestConfigChangeEmbedded(t *testing.T) { configChangeMatrix(t, "embedded") }

func TestConfigChangeAWS(t *testing.T) { configChangeMatrix(t, "aws") }

func configChangeMatrix(t *testing.T, backend string) {
	bin := procBinary(t)
	started := time.Now()
	t.Cleanup(func() {
		t.Logf("%s matrix: %d cases in %s", backend, len(ccCases), time.Since(started).Round(time.Millisecond))
	})
	for _, c := range ccCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			newCCRun(t, bin, backend, c).play()
		})
	}
}

// play runs the timeline of the case.
func (r *ccRun) play() {
	t := r.t
	r.stage(0)
	r.run(0, "run", "--now", ccNow[0])

	r.stage(1)
	r.run(1, "run", "--now", ccNow[1])
	r.verify("verify after one run on the new config", 1, false)

	r.stage(2)
	r.run(2, "run", "--now", ccNow[2])
	r.verify("verify --repair over the change", 2, true)
	before := r.snap
	out := r.bin("run", "--backfill", "--from", ccStart.Format(time.RFC3339), "--to", ccCheckpoint[2], "--now", ccNow[2])
	if out.code != exitOK {
		t.Errorf("run --backfill over the change: exit %d, want 0\n%s", out.code, ccOutput(out))
	}
	r.after("run --backfill over the change", before, nil, report.ReasonBackfill, r.c.backfillRebuilds, ccCheckpoint[2])
	r.verify("verify after the backfill", 2, false)

	r.checkFinal()
}

// run places the items of stage s, then runs `args` (a run at ccNow[s])
// and checks what it published.
func (r *ccRun) run(s int, args ...string) {
	t := r.t
	before := r.snap
	placed := r.placed[s]
	out := r.bin(args...)
	if out.code != exitOK {
		t.Fatalf("stage %d: reportjob %s: exit %d, want 0\n%s", s, strings.Join(args, " "), out.code, ccOutput(out))
	}
	sum := lastJSON(t, out.stdout)
	if sum["checkpoint"] != ccCheckpoint[s] {
		t.Errorf("stage %d: run --now %s left the checkpoint at %v, want %s (summary %s)", s, ccNow[s], sum["checkpoint"], ccCheckpoint[s], out.stdout)
	}
	cp := ccStart.Format(time.RFC3339)
	if s > 0 {
		cp = ccCheckpoint[s-1]
	}
	r.after(fmt.Sprintf("stage %d run --now %s", s, ccNow[s]), before, placed, report.ReasonRecheck, false, cp)
}

// verify runs verify over [ccStart, ccCheckpoint[s]) at ccNow[s] (with
// --repair when repair) and checks that it exits 0, or, with --repair,
// that it repaired only what items changed.
func (r *ccRun) verify(what string, s int, repair bool) {
	t := r.t
	to := ccCheckpoint[s]
	args := []string{"verify", "--from", ccStart.Format(time.RFC3339), "--to", to, "--now", ccNow[s]}
	if repair {
		args = append(args, "--repair")
	}
	before := r.snap
	out := r.bin(args...)
	switch {
	case repair && (out.code == exitOK || out.code == exitDiffers):
		// exit 4 = differences found and repaired; r.after judges them.
	case out.code != exitOK:
		t.Errorf("%s: `reportjob %s`: exit %d, want 0 (verify must be clean)\n%s", what, strings.Join(args, " "), out.code, ccVerifyOutput(out))
	}
	if out.code == exitDiffers && repair {
		t.Logf("%s: %s", what, ccVerifyOutput(out))
	}
	// The late item of stage 2 is in a delivered period no recheck read:
	// only its period may be restated, by the repair.
	var placed []ccItem
	if repair {
		placed = r.placed[2]
	}
	r.after(what, before, placed, report.ReasonRepair, false, to)
}

// ccOutput is a process's summary line and the error lines of its log.
func ccOutput(out procOut) string {
	var errs []string
	for _, l := range strings.Split(out.stderr, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) || (l != "" && !strings.HasPrefix(l, "{")) {
			errs = append(errs, l)
		}
	}
	return fmt.Sprintf("stdout: %s\nstderr (errors and warnings):\n%s", strings.TrimSpace(out.stdout), procTail(strings.Join(errs, "\n"), 12))
}

// ccVerifyOutput is verify's differences, one line per period.
func ccVerifyOutput(out procOut) string {
	lines := strings.Split(strings.TrimRight(out.stdout, "\n"), "\n")
	var sum verifySummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		return ccOutput(out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "verify: status %s, %d periods, %d ok, %d differ, %d repaired", sum.Status, sum.Periods, sum.OK, sum.Differ, sum.Repaired)
	if sum.Error != "" {
		fmt.Fprintf(&b, ", error: %s", sum.Error)
	}
	for _, d := range sum.Differences {
		pj, _ := json.Marshal(d.Problems)
		fmt.Fprintf(&b, "\n  %s: %s revision %d, items manifest %d now %d, repaired %q, problems %s",
			d.Period, d.Status, d.Revision, d.ItemsManifest, d.ItemsNow, d.Repaired, pj)
	}
	if sum.Status == "" {
		return ccOutput(out)
	}
	return b.String()
}

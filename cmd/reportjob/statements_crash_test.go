//go:build linux

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// The monthly close under crashes (issue 16): the real binary kills itself
// (RJTEST_CRASH_AT) at every crash point of the close, and at a period's
// manifest, during a run that publishes January's final statement and
// February's first draft; ONE rerun must exit 0 and leave what an
// uncrashed run leaves: the same statements (status and every amount, by
// month, agency and currency), built from the same period revisions, the
// same period objects, no statement object unlisted by its month
// manifest, no due marker, no intent, and the invariant.
//
// Statements in Africa/Lagos (+01:00), hourly periods from 2026-01-31,
// recheck_after [1h], close_after 1h. A first run at 2026-01-31T22:05Z
// delivers 00:00Z..21:00Z (January draft, revision 1); then items arrive
// for 22:00Z (January's last period), 23:00Z and 00:00Z (February's first)
// and a late one into 21:00Z. The run under test, at 2026-02-01T01:05Z,
// delivers 22:00Z, 23:00Z and 00:00Z, restates 21:00Z at its recheck, and
// then closes January on time (its end + close_after has passed and its
// rechecks are done: reason "close") and publishes February's draft.
//
//	go test ./cmd/reportjob -run TestStatementsCrashPoints -v

const (
	stcPrepNow = "2026-01-31T22:05:00Z"
	stcNow     = "2026-02-01T01:05:00Z"
	stcTopYAML = e2eCommissionYAML + "\nstatements: {timezone: " + stZone + ", close_after: 1h, agency_files: [csv, parquet]}"
)

// stCrashCases: month-after-upload:1 is January's first object, :10 the
// first of February's (January uploads its statements file and two files
// for each of its 4 agencies); month-after-manifest:1 and
// month-after-cleanup:1 are January's, :2 February's; before-due-delete:1
// is the close at the start of the run (nothing due), :2 the one at its
// end; after-manifest:1 is 22:00Z's publication, :4 the restatement of
// 21:00Z.
var stCrashCases = []string{
	"month-after-upload:1", "month-after-upload:10",
	"month-after-manifest:1", "month-after-manifest:2",
	"month-after-cleanup:1", "month-after-cleanup:2",
	"before-due-delete:1", "before-due-delete:2",
	"after-manifest:1", "after-manifest:4",
}

func TestStatementsCrashPoints(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	for _, p := range []crashpoint.Point{crashpoint.MonthAfterUpload, crashpoint.MonthAfterManifest, crashpoint.MonthAfterCleanup, crashpoint.BeforeDueDelete} {
		found := false
		for _, c := range stCrashCases {
			found = found || strings.HasPrefix(c, string(p)+":")
		}
		if !found {
			t.Errorf("crash point %s has no statements case", p)
		}
	}
	onBothStacks(t, func(t *testing.T, backend string) ([]string, func(*testing.T, string)) {
		started := time.Now()
		ref := stcReference(t, bin, backend)
		t.Cleanup(func() {
			crashLine(t, "statements crash points on %s: %d cases in %s", backend, len(stCrashCases), time.Since(started).Round(time.Millisecond))
		})
		return stCrashCases, func(t *testing.T, c string) { stcCrashAt(t, bin, backend, c, ref) }
	})
}

// stcSetup makes a store and sink in the state just before the run under
// test.
func stcSetup(t *testing.T, bin, backend string) *stRunner {
	t.Helper()
	h := procHarness(t, backend, harnessOptions{start: "2026-01-31", extra: crashExtra(backend), top: stcTopYAML})
	r := &stRunner{t: t, h: h, bin: bin, final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest(stcPrepNow,
		stTx{id: "p01", agency: "acme", amount: "12.34", currency: "USD", at: "2026-01-31T05:10:00Z"},
		stTx{id: "p02", agency: "beta", amount: "1500", currency: "JPY", at: "2026-01-31T09:20:00Z"},
		stTx{id: "p03", agency: "gamma", amount: "1.005", currency: "BHD", at: "2026-01-31T14:20:00Z"},
		stTx{id: "p04", agency: "Ωmega", amount: "9.99", currency: "EUR", at: "2026-01-31T21:30:00Z"},
		stTx{id: "p05", agency: "acme", amount: "5.00", currency: "USD", kind: "refund", at: "2026-01-31T21:45:00Z"},
	)
	r.run(stcPrepNow, map[string]any{"periods_processed": float64(22)})
	r.ingest(stcNow,
		stTx{id: "q01", agency: "beta", amount: "3.33", currency: "USD", at: "2026-01-31T21:55:00Z"}, // late: 21:00Z is delivered
		stTx{id: "q02", agency: "gamma", amount: "250", currency: "JPY", at: "2026-01-31T22:30:00Z"},
		stTx{id: "q03", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-31T23:30:00Z"},
		stTx{id: "q04", agency: "Ωmega", amount: "4.321", currency: "BHD", at: "2026-02-01T00:10:00Z"},
		stTx{id: "q05", agency: "delta", amount: "1234", currency: "JPY", at: "2026-02-01T00:20:00Z"},
	)
	return r
}

// stcOutcome is what a scenario leaves, for comparison.
type stcOutcome struct {
	// statements: month -> "agency/currency" -> line (revision zeroed).
	statements map[string]map[string]stLine
	status     map[string]string
	// periods: month -> the period revisions its statement was built from.
	periods map[string]string
	// objects: every object but the statements' and the manifests.
	objects map[string]string
}

func stcOutcomeOf(r *stRunner) stcOutcome {
	r.t.Helper()
	o := stcOutcome{statements: map[string]map[string]stLine{}, status: map[string]string{}, periods: map[string]string{},
		objects: map[string]string{}}
	objs := r.h.objects()
	mans := stCheckObjects(r.t, r.h, objs)
	stCheckTotals(r.t, r.h, objs, mans, stZone)
	for m, man := range mans {
		sum, lines := r.statement(m)
		for k, l := range lines {
			l.StatementRevision = 0
			lines[k] = l
		}
		o.statements[m], o.status[m] = lines, fmt.Sprint(sum["statement_status"])
		var ps []string
		for _, p := range man.Periods {
			ps = append(ps, fmt.Sprintf("%s@%d", p.Start.UTC().Format("0102T15"), p.Revision))
		}
		o.periods[m] = strings.Join(ps, " ")
	}
	for k, sha := range objs {
		if !stIsMonthKey(k) && !strings.HasSuffix(k, "/manifest.json") {
			o.objects[k] = sha
		}
	}
	return o
}

// stcReference runs the scenario once without a crash.
func stcReference(t *testing.T, bin, backend string) stcOutcome {
	t.Helper()
	r := stcSetup(t, bin, backend)
	r.run(stcNow, map[string]any{"status": "ok", "periods_processed": float64(3), "restated": float64(1), "checkpoint": "2026-02-01T01:00:00Z"})
	ref := stcOutcomeOf(r)
	if ref.status["2026-01"] != "final" || ref.status["2026-02"] != "draft" {
		t.Fatalf("reference: statuses %v, want January final and February draft", ref.status)
	}
	if m := r.monthManifest("2026-01"); m.Reason != monthclose.ReasonClose || len(m.Periods) != 23 {
		t.Fatalf("reference: January's manifest: reason %q, %d periods; want close, 23", m.Reason, len(m.Periods))
	}
	if l := ref.statements["2026-01"]["beta/USD"]; l.CommissionDue != "0.40" {
		t.Fatalf("reference: January beta USD %+v: the restatement of 21:00Z is not in the final statement", l)
	}
	if l := ref.statements["2026-02"]["delta/JPY"]; l.CommissionDue != "123" || l.Status != "draft" {
		t.Fatalf("reference: February delta JPY %+v", l)
	}
	return ref
}

// stcCrashAt crashes the run under test at point, reruns it once, and
// compares the outcome with the reference.
func stcCrashAt(t *testing.T, bin, backend, point string, ref stcOutcome) {
	r := stcSetup(t, bin, backend)
	crash := procRun(t, bin, r.h, []string{crashpoint.EnvVar + "=" + point}, "run", "--now", stcNow)
	if !crash.killed || !strings.Contains(crash.stderr, "crashpoint "+point+" reached") {
		t.Fatalf("the run did not crash at %s: %s", point, crash)
	}
	// The crash left work for the rerun: due markers (a period published,
	// its month not yet) or a month publication's intent; but at the
	// start of the run, where nothing was due yet.
	left := 0
	for k := range r.h.objects() {
		if strings.HasPrefix(k, report.DueStatementsPrefix) || (strings.HasPrefix(k, report.MonthManifestsPrefix) && report.IsIntentKey(k)) {
			left++
		}
	}
	if (left == 0) != (point == "before-due-delete:1") {
		t.Errorf("the crash at %s left %d due markers and month intents", point, left)
	}
	procWaitLease(r.h)
	rerun := procRun(t, bin, r.h, nil, "run", "--now", stcNow)
	procKeepLogs(t, map[string]procOut{"crash": crash, "rerun": rerun})
	if rerun.code != exitOK {
		t.Fatalf("the one rerun after a crash at %s: %s", point, rerun)
	}
	got := stcOutcomeOf(r)
	if fmt.Sprint(got.status) != fmt.Sprint(ref.status) {
		t.Errorf("statuses %v, reference %v", got.status, ref.status)
	}
	if fmt.Sprint(got.periods) != fmt.Sprint(ref.periods) {
		t.Errorf("statements built from %v, reference %v", got.periods, ref.periods)
	}
	for m, lines := range ref.statements {
		if fmt.Sprint(got.statements[m]) != fmt.Sprint(lines) {
			t.Errorf("%s statements:\n got %v\nwant %v", m, got.statements[m], lines)
		}
	}
	if len(got.statements) != len(ref.statements) {
		t.Errorf("%d months, reference %d", len(got.statements), len(ref.statements))
	}
	if !mapsEqual(got.objects, ref.objects) {
		for k := range ref.objects {
			if got.objects[k] != ref.objects[k] {
				t.Errorf("period object %s: %.12s, reference %.12s", k, got.objects[k], ref.objects[k])
			}
		}
		for k := range got.objects {
			if _, ok := ref.objects[k]; !ok {
				t.Errorf("object the reference does not have: %s", k)
			}
		}
	}
	// January is final: a later run leaves it as it is.
	jan := r.h.read(r.h.sink(), report.MonthManifestKey("2026-01"))
	r.run("2026-02-01T01:10:00Z", map[string]any{"status": "nothing_due"})
	if again := r.h.read(r.h.sink(), report.MonthManifestKey("2026-01")); string(again) != string(jan) {
		t.Errorf("January's final manifest changed after a later run")
	}
	t.Logf("%s %s: crashed after %s, rerun exit 0 in %s", backend, point, crash.took.Round(time.Millisecond), rerun.took.Round(time.Millisecond))
}

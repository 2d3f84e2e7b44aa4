//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/report"
)

// Repairs of a final month under crashes (issue 31): the real binary is
// killed during a `verify --repair` that (a) restates 2026-01-31, a period
// of the final January, for a late item, and books it in February's draft,
// and (b) restores January's lost acme PDF and statements Parquet from
// January's own objects, although 2026-01-30 was restated (and booked)
// before. After ONE rerun of the repair (exit 0 or 4, status ok or
// repaired, nothing "NOT repairable") a plain verify exits 0, and the sink
// holds what an uncrashed repair leaves: January byte for byte as it was
// closed, the same February statements (every amount, by agency and
// currency), built from the same period revisions, the same period
// objects; every statement object listed; and the sum of all statements
// equals the latest period summaries (stCheckTotals) after every rerun.
//
// Daily periods, statements in UTC with PDF, CSV and Parquet (frSetup's
// config).
//
//	go test ./cmd/reportjob -run 'TestStatementsRepairCrash' -v

const frcNow = "2026-02-03T01:00:00Z"

var frcVerify = []string{"verify", "--from", "2026-01-28T00:00:00Z", "--to", "2026-02-02T00:00:00Z", "--now", frcNow}

// frcCrashCases: mid-restatement:1 and after-manifest:1 are 01-31's
// restatement; month-after-upload:1 is February's first object, :6
// January's first restored object; month-after-
// manifest:1 and month-after-cleanup:1 are February's; before-due-delete:2
// is the close after the periods' repairs.
// (February uploads its statements Parquet, its adjustments file and
// beta's three files, whose statement the booking of 01-31 changes.)
var frcCrashCases = []string{
	"mid-restatement:1", "after-manifest:1",
	"month-after-upload:1", "month-after-upload:6",
	"month-after-manifest:1", "month-after-cleanup:1", "before-due-delete:2",
}

// frcSetup makes a store and sink in the state just before the repair
// under test.
func frcSetup(t *testing.T, bin, backend string) *stRunner {
	t.Helper()
	h := procHarness(t, backend, harnessOptions{period: "24h", start: "2026-01-28", extra: frReportYAML + "\n" + crashExtra(backend), top: frTopYAML})
	r := &stRunner{t: t, h: h, bin: bin, final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-02-02T00:00:00Z",
		stTx{id: "f1", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-29T05:00:00Z"},
		stTx{id: "f2", agency: "beta", amount: "20.00", currency: "EUR", at: "2026-01-30T06:00:00Z"},
		stTx{id: "f3", agency: "acme", amount: "30.00", currency: "USD", at: "2026-01-31T07:00:00Z"},
	)
	r.run("2026-02-02T00:05:00Z", nil)
	r.run("2026-02-02T02:05:00Z", nil)
	r.ingest("2026-02-03T00:00:00Z",
		stTx{id: "f4", agency: "acme", amount: "5.00", currency: "USD", at: "2026-01-30T08:00:00Z"},
		stTx{id: "f5", agency: "delta", amount: "7.00", currency: "USD", at: "2026-01-30T09:00:00Z"},
	)
	r.cli(0, "run", "--backfill", "--from", "2026-01-30T00:00:00Z", "--to", "2026-01-31T00:00:00Z", "--now", "2026-02-03T00:05:00Z")
	r.ingest(frcNow, stTx{id: "f6", agency: "beta", amount: "8.00", currency: "EUR", at: "2026-01-31T09:00:00Z"})
	jan := r.monthManifest("2026-01")
	if !jan.Final() {
		t.Fatalf("setup: January is %s", jan.Status)
	}
	r.final["2026-01"] = stMonthObjects(r.h.objects(), "2026-01", jan)
	lost := 0
	for _, f := range jan.Files {
		if strings.HasSuffix(f.Key, ".pdf") && strings.Contains(f.Key, "agency=acme/") || strings.HasPrefix(f.Key, report.StatementsPrefix("2026-01")) {
			if err := h.sink().Delete(context.Background(), f.Key); err != nil {
				t.Fatal(err)
			}
			lost++
		}
	}
	if lost != 2 {
		t.Fatalf("setup: %d of January's objects deleted, want acme's PDF and the statements Parquet", lost)
	}
	return r
}

// frcRepairDone checks a repair (or rerun) that exited: 0 or 4, status
// ok or repaired, nothing not repairable.
func frcRepairDone(t *testing.T, what string, out procOut) {
	t.Helper()
	sum := lastJSON(t, out.stdout)
	if out.code != exitOK && out.code != exitDiffers || sum["status"] != "ok" && sum["status"] != "repaired" ||
		strings.Contains(out.stdout, "NOT repairable") {
		t.Fatalf("%s: %s", what, out)
	}
}

// frcOutcomeOf checks the sink after a completed repair (a plain verify
// exits 0; every statement check; January as it was closed) and returns
// what is compared with the reference.
func frcOutcomeOf(r *stRunner) stcOutcome {
	r.t.Helper()
	r.cli(exitOK, frcVerify...)
	frCheck(r, "the repair")
	o := stcOutcome{statements: map[string]map[string]stLine{}, status: map[string]string{}, periods: map[string]string{},
		objects: map[string]string{}}
	objs := r.h.objects()
	for _, m := range []string{"2026-01", "2026-02"} {
		sum, lines := r.statement(m)
		for k, l := range lines {
			l.StatementRevision = 0
			lines[k] = l
		}
		o.statements[m], o.status[m] = lines, fmt.Sprint(sum["statement_status"])
		var ps []string
		for _, p := range r.monthManifest(m).Periods {
			ps = append(ps, fmt.Sprintf("%s@%d", p.Start.UTC().Format("0102"), p.Revision))
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

// frcCompare reports how got differs from the reference.
func frcCompare(t *testing.T, got, ref stcOutcome) {
	t.Helper()
	if fmt.Sprint(got.status) != fmt.Sprint(ref.status) || fmt.Sprint(got.periods) != fmt.Sprint(ref.periods) {
		t.Errorf("statuses %v built from %v, reference %v from %v", got.status, got.periods, ref.status, ref.periods)
	}
	for m, lines := range ref.statements {
		if fmt.Sprint(got.statements[m]) != fmt.Sprint(lines) {
			t.Errorf("%s statements:\n got %v\nwant %v", m, got.statements[m], lines)
		}
	}
	if !mapsEqual(got.objects, ref.objects) {
		t.Errorf("period objects differ from the reference's")
	}
}

// frcReference runs the repair once without a crash.
func frcReference(t *testing.T, bin, backend string) stcOutcome {
	t.Helper()
	r := frcSetup(t, bin, backend)
	out := procRun(t, bin, r.h, nil, append(frcVerify, "--repair")...)
	frcRepairDone(t, "the reference repair", out)
	ref := frcOutcomeOf(r)
	if n := len(r.monthManifest("2026-02").Adjustments); n != 2 || !strings.Contains(ref.periods["2026-01"], "0131@1") {
		t.Fatalf("reference: February books %d adjustments (want 01-30 and 01-31); January built from %s", n, ref.periods["2026-01"])
	}
	return ref
}

func TestStatementsRepairCrashPoints(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	onBothStacks(t, func(t *testing.T, backend string) ([]string, func(*testing.T, string)) {
		started := time.Now()
		ref := frcReference(t, bin, backend)
		cases := frcCrashCases
		if backend == "aws" && !procLong() {
			cases = []string{"mid-restatement:1", "month-after-upload:6", "before-due-delete:2"}
		}
		t.Cleanup(func() {
			crashLine(t, "final-month repair crash points on %s: %d cases in %s", backend, len(cases), time.Since(started).Round(time.Millisecond))
		})
		return cases, func(t *testing.T, c string) { frcCrashAt(t, bin, backend, c, ref) }
	})
}

// frcCrashAt crashes the repair at point, reruns it once, and compares.
func frcCrashAt(t *testing.T, bin, backend, point string, ref stcOutcome) {
	r := frcSetup(t, bin, backend)
	crash := procRun(t, bin, r.h, []string{crashpoint.EnvVar + "=" + point}, append(frcVerify, "--repair")...)
	if !crash.killed || !strings.Contains(crash.stderr, "crashpoint "+point+" reached") {
		t.Fatalf("the repair did not crash at %s: %s", point, crash)
	}
	if point == "month-after-upload:6" && !strings.Contains(crash.stderr, "statements published") {
		t.Fatalf("the crash at %s was not in January's restore, after February's publication: %s", point, crash)
	}
	procWaitLease(r.h)
	rerun := procRun(t, bin, r.h, nil, append(frcVerify, "--repair")...)
	procKeepLogs(t, map[string]procOut{"crash": crash, "rerun": rerun})
	frcRepairDone(t, "the one rerun after a crash at "+point, rerun)
	frcCompare(t, frcOutcomeOf(r), ref)
	t.Logf("%s %s: crashed after %s, rerun exit %d in %s", backend, point, crash.took.Round(time.Millisecond), rerun.code,
		rerun.took.Round(time.Millisecond))
}

// TestStatementsRepairRandomKill: the same repair killed after a random
// delay (seeded; RJTEST_SEED replays), on the embedded store, then rerun
// once.
func TestStatementsRepairRandomKill(t *testing.T) {
	t.Parallel()
	bin := procBinary(t)
	seed := crashSeed(t)
	t.Logf("seed %d (replay with RJTEST_SEED=%d)", seed, seed)
	ref := frcReference(t, bin, "embedded")
	timing := frcSetup(t, bin, "embedded")
	timed := procRun(t, bin, timing.h, nil, append(frcVerify, "--repair")...)
	frcRepairDone(t, "the timing repair", timed)
	maxDelay := max(timed.took*9/10, 50*time.Millisecond)
	trials, landed := 4, 0
	if procLong() {
		trials = 24
	}
	for i := range trials {
		t.Run(fmt.Sprintf("trial-%02d", i), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			r := frcSetup(t, bin, "embedded")
			delay := time.Duration(rng.Int64N(int64(maxDelay)))
			out := procKillAfter(t, bin, r.h, delay, append(frcVerify, "--repair")...)
			if out.killed {
				landed++
				rerun := procRun(t, bin, r.h, nil, append(frcVerify, "--repair")...)
				procKeepLogs(t, map[string]procOut{"killed": out, "rerun": rerun})
				frcRepairDone(t, fmt.Sprintf("the one rerun after a kill at %s (%s)", delay, lastLogMsg(out.stderr)), rerun)
			} else {
				frcRepairDone(t, "the repair that beat its kill", out)
			}
			frcCompare(t, frcOutcomeOf(r), ref)
		})
	}
	t.Logf("final-month repair random kills: %d trials, %d killed mid-run (seed %d)", trials, landed, seed)
}

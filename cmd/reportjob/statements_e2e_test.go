//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// The monthly statements end to end (issue 16, SPEC section 7), through
// the built binary, on both stacks: hourly periods from 2026-01-31T00:00Z
// with statements in Africa/Lagos (+01:00, no DST), so that January
// (Lagos) ends at 2026-01-31T23:00Z and the period 23:00Z is February's
// first. recheck_after [1h, 1d], close_after 1d.
//
//	step 1  run 01-31T22:05Z          January draft, revision 1; --close of January exits 2 (not delivered)
//	step 2  late item into 21:00Z     the recheck restates it: January draft, revision 2
//	step 3  run 02-01T03:05Z          February draft; January still draft (rechecks owed); --close of February exits 2
//	step 4  statement --close 2026-01 January final, early (its 1d rechecks are still owed)
//	step 5  late items into 10:00Z    its 1d recheck restates it after the close: booked in February (recheck, 1 -> 2)
//	step 6  late items into 21:00Z and 05:00Z: the recheck (2 -> 3) and a backfill (1 -> 2), both booked in February
//	step 6b verify --repair restores a lost object of a January period: nothing booked, no month changes
//	step 7  a run with nothing due    nothing changes
//
// After every step: the invariant (statements vs. the latest revision of
// every period, by DuckDB), the agency CSVs vs. the statements Parquet,
// every statement object listed by its month manifest, no due marker or
// intent left, and every final month byte for byte as it was closed.
// January closing on time (close_after passed, rechecks done) is the crash
// scenario's (statements_crash_test.go): under the close rule a month whose
// rechecks are done is never rechecked again, so a recheck restating a
// period of a final month needs an early close.

func TestStatementsE2EEmbedded(t *testing.T) {
	stScenario(t, newHarness(t, harnessOptions{start: "2026-01-31", extra: stReportYAML, top: stTopYAML}))
}

func TestStatementsE2EAWS(t *testing.T) {
	stScenario(t, newHarness(t, harnessOptions{backend: "aws", shards: 4, start: "2026-01-31", extra: stReportYAML, top: stTopYAML}))
}

const (
	stZone       = "Africa/Lagos"
	stReportYAML = "  recheck_after: [1h, 1d]\n  max_periods_per_run: 200"
	stTopYAML    = e2eCommissionYAML + "\nstatements: {timezone: " + stZone + ", close_after: 1d, agency_files: [csv, parquet]}"
)

// stTx is one transaction as a producer sends it to `reportjob ingest`.
type stTx struct {
	id, agency, amount, currency, kind string
	at                                 string // RFC 3339
}

// stRunner runs the built binary on a harness and checks what it left.
type stRunner struct {
	t   *testing.T
	h   *harness
	bin string
	// final is each final month's objects (key -> sha256) as it was
	// closed: they never change.
	final map[string]map[string]string
	n     int
}

// cli runs the binary and fails the test unless it exits with want; it
// returns the JSON summary line and the whole stdout.
func (r *stRunner) cli(want int, args ...string) (map[string]any, string) {
	r.t.Helper()
	out := procRun(r.t, r.bin, r.h, nil, args...)
	if out.code != want {
		r.t.Fatalf("reportjob %s: %s\nwant exit %d", strings.Join(args, " "), out, want)
	}
	return lastJSON(r.t, out.stdout), out.stdout
}

// ingest writes txs as JSON Lines and ingests them at now (late ones
// allowed).
func (r *stRunner) ingest(now string, txs ...stTx) {
	r.t.Helper()
	var b strings.Builder
	for _, tx := range txs {
		m := map[string]any{"transaction_id": tx.id, "agency_id": tx.agency, "amount": tx.amount, "currency": tx.currency,
			"recorded_at": tx.at, "customer_id": "cust-" + tx.id}
		if tx.kind != "" {
			m["kind"] = tx.kind
		}
		line, err := json.Marshal(m)
		if err != nil {
			r.t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	r.n++
	file := filepath.Join(r.h.dir, fmt.Sprintf("batch-%d.jsonl", r.n))
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if sum, _ := r.cli(0, "ingest", "--file", file, "--now", now, "--allow-late"); sum["written"] != float64(len(txs)) {
		r.t.Fatalf("ingest: %v, want %d written", sum, len(txs))
	}
}

// run runs `run --now now` and checks its summary.
func (r *stRunner) run(now string, want map[string]any) map[string]any {
	r.t.Helper()
	sum, _ := r.cli(0, "run", "--now", now)
	for k, v := range want {
		if sum[k] != v {
			r.t.Fatalf("run --now %s: %s = %v, want %v\nsummary: %v", now, k, sum[k], v, sum)
		}
	}
	return sum
}

// stLine is one line of `statement --json`.
type stLine struct {
	Month                  string `json:"month"`
	Status                 string `json:"status"`
	AgencyID               string `json:"agency_id"`
	Currency               string `json:"currency"`
	PurchaseCount          int64  `json:"purchase_count"`
	RefundCount            int64  `json:"refund_count"`
	Net                    string `json:"net_amount"`
	Commission             string `json:"commission_amount"`
	PriorPeriodAdjustments string `json:"prior_period_adjustments"`
	CommissionDue          string `json:"commission_due"`
	StatementRevision      int32  `json:"statement_revision"`
}

// statement runs `statement --month m --json` and returns the summary and
// the lines by "agency/currency".
func (r *stRunner) statement(m string) (map[string]any, map[string]stLine) {
	r.t.Helper()
	sum, out := r.cli(0, "statement", "--month", m, "--json")
	lines := map[string]stLine{}
	all := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, l := range all[:len(all)-1] {
		var sl stLine
		if err := json.Unmarshal([]byte(l), &sl); err != nil {
			r.t.Fatalf("statement --json line %q: %v", l, err)
		}
		// A line carries the revision its agency's statement last changed
		// in: at most the month's (the manifest's agencies say which).
		if sl.Month != m || sl.Status != sum["statement_status"] || sl.StatementRevision < 1 || float64(sl.StatementRevision) > sum["statement_revision"].(float64) {
			r.t.Errorf("statement --json line %+v disagrees with its summary %v", sl, sum)
		}
		lines[sl.AgencyID+"/"+sl.Currency] = sl
	}
	if sum["agencies"] == nil || int(sum["agencies"].(float64)) > len(lines) {
		r.t.Errorf("statement summary %v: agencies vs %d lines", sum, len(lines))
	}
	return sum, lines
}

// wantStatus checks month m's status and revision (0: any).
func (r *stRunner) wantStatus(m, status string, revision int) map[string]any {
	r.t.Helper()
	sum, _ := r.statement(m)
	if sum["statement_status"] != status || (revision > 0 && sum["statement_revision"] != float64(revision)) {
		r.t.Fatalf("statement --month %s: %v, want %s revision %d", m, sum, status, revision)
	}
	return sum
}

func stScenario(t *testing.T, h *harness) {
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")

	// Step 1: January (Lagos) up to 21:00Z; late ones allowed (recorded
	// long before the ingest clock).
	r.ingest("2026-01-31T22:05:00Z",
		stTx{id: "a01", agency: "acme", amount: "12.34", currency: "USD", at: "2026-01-31T05:10:00Z"},
		stTx{id: "a02", agency: "beta", amount: "1500", currency: "JPY", at: "2026-01-31T05:20:00Z"},
		stTx{id: "a03", agency: "gamma", amount: "1.005", currency: "BHD", at: "2026-01-31T10:20:00Z"},
		stTx{id: "a04", agency: "Ωmega", amount: "9.99", currency: "EUR", at: "2026-01-31T12:30:00Z"},
		stTx{id: "a05", agency: "acme", amount: "7", currency: "JPY", at: "2026-01-31T20:15:00Z"},
		stTx{id: "a06", agency: "beta", amount: "2.500", currency: "BHD", at: "2026-01-31T21:10:00Z"},
		stTx{id: "a07", agency: "Агентство", amount: "19.99", currency: "USD", at: "2026-01-31T21:40:00Z"},
		stTx{id: "a08", agency: "acme", amount: "5.00", currency: "USD", kind: "refund", at: "2026-01-31T21:45:00Z"},
	)
	r.run("2026-01-31T22:05:00Z", map[string]any{"periods_processed": float64(22), "checkpoint": "2026-01-31T22:00:00Z"})
	r.wantStatus("2026-01", "draft", 1)
	sum, _ := r.cli(exitUsage, "statement", "--close", "--month", "2026-01", "--now", "2026-01-31T22:06:00Z")
	if sum["status"] != "bad_usage" || !strings.Contains(fmt.Sprint(sum["error"]), "not fully delivered") {
		t.Fatalf("--close of a month not delivered: %v", sum)
	}
	r.check("step 1")

	// Step 2: a late item into 21:00Z before the close: its recheck at
	// 23:00Z restates it, and January's draft follows.
	r.ingest("2026-01-31T23:05:00Z",
		stTx{id: "b01", agency: "acme", amount: "3.33", currency: "USD", at: "2026-01-31T21:50:00Z"},
		stTx{id: "b02", agency: "gamma", amount: "250", currency: "JPY", at: "2026-01-31T22:30:00Z"},
		stTx{id: "b03", agency: "beta", amount: "0.999", currency: "BHD", at: "2026-01-31T22:59:00Z"},
	)
	r.run("2026-01-31T23:05:00Z", map[string]any{"periods_processed": float64(1), "restated": float64(1), "late_items": float64(1)})
	_, jan := r.statement("2026-01")
	r.wantStatus("2026-01", "draft", 2)
	if l := jan["acme/USD"]; l.PurchaseCount != 2 || l.RefundCount != 1 || l.Net != "10.67" || l.CommissionDue != "1.06" {
		t.Errorf("January acme USD after the restatement: %+v, want 2 purchases, 1 refund, net 10.67, due 1.06", l)
	}
	r.check("step 2")

	// Step 3: February's first periods (23:00Z is February in Lagos).
	r.ingest("2026-02-01T03:05:00Z",
		stTx{id: "c01", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-31T23:30:00Z"},
		stTx{id: "c02", agency: "Ωmega", amount: "1234", currency: "JPY", at: "2026-02-01T00:10:00Z"},
		stTx{id: "c03", agency: "gamma", amount: "4.321", currency: "BHD", at: "2026-02-01T01:20:00Z"},
		stTx{id: "c04", agency: "beta", amount: "8.88", currency: "EUR", at: "2026-02-01T02:05:00Z"},
	)
	r.run("2026-02-01T03:05:00Z", map[string]any{"periods_processed": float64(4), "checkpoint": "2026-02-01T03:00:00Z"})
	r.wantStatus("2026-01", "draft", 0) // its 1d rechecks are owed
	_, feb := r.statement("2026-02")
	r.wantStatus("2026-02", "draft", 1)
	if l := feb["acme/USD"]; l.Commission != "1.00" || l.PriorPeriodAdjustments != "0.00" {
		t.Errorf("February acme USD: %+v", l)
	}
	sum, _ = r.cli(exitUsage, "statement", "--close", "--month", "2026-02", "--now", "2026-02-01T03:06:00Z")
	if !strings.Contains(fmt.Sprint(sum["error"]), "2026-02 is not fully delivered") {
		t.Fatalf("--close of February: %v", sum)
	}
	r.check("step 3")

	// Step 4: January closed early.
	sum, _ = r.cli(0, "statement", "--close", "--month", "2026-01", "--now", "2026-02-01T03:10:00Z")
	if sum["closed"] != true || sum["statement_status"] != "final" {
		t.Fatalf("statement --close --month 2026-01: %v", sum)
	}
	r.wantStatus("2026-01", "final", 0)
	if m := r.monthManifest("2026-01"); m.Reason != "statement --close" {
		t.Errorf("January's final manifest: reason %q, want statement --close", m.Reason)
	}
	sum, _ = r.cli(exitUsage, "statement", "--close", "--month", "2026-01", "--now", "2026-02-01T03:11:00Z")
	if !strings.Contains(fmt.Sprint(sum["error"]), "final already") {
		t.Errorf("--close of a final month: %v", sum)
	}
	r.check("step 4")

	// Step 5: late items into January's 10:00Z after the close: its 1d
	// recheck (11:00Z) restates it, booked as a prior-period adjustment in
	// February.
	r.ingest("2026-02-01T11:05:00Z",
		stTx{id: "d01", agency: "acme", amount: "7.50", currency: "USD", at: "2026-01-31T10:40:00Z"},
		stTx{id: "d02", agency: "gamma", amount: "2.000", currency: "BHD", at: "2026-01-31T10:45:00Z"},
		stTx{id: "d03", agency: "acme", amount: "1.00", currency: "USD", at: "2026-02-01T05:00:00Z"},
	)
	r.run("2026-02-01T11:05:00Z", map[string]any{"restated": float64(1), "late_items": float64(2)})
	r.wantStatus("2026-01", "final", 0)
	sum, feb = r.statement("2026-02")
	if sum["statement_status"] != "draft" || sum["prior_period_adjustments"] != float64(1) {
		t.Fatalf("February after a restatement of a January period: %v", sum)
	}
	for k, want := range map[string]string{"acme/USD": "0.75", "gamma/BHD": "0.200", "beta/EUR": "0.00"} {
		if got := feb[k].PriorPeriodAdjustments; got != want {
			t.Errorf("February %s prior_period_adjustments %q, want %q (%+v)", k, got, want, feb[k])
		}
	}
	if l := feb["acme/USD"]; l.Commission != "1.10" || l.CommissionDue != "1.85" {
		t.Errorf("February acme USD: %+v, want commission 1.10, due 1.85", l)
	}
	r.wantAdjustments("2026-02", []stAdj{{"2026-01-31T10:00:00Z", 1, 2, "recheck"}})
	r.check("step 5")

	// Step 6: the same 21:00Z restated a third time (by its 1d recheck,
	// from the revision January's final statement holds) and 05:00Z by a
	// backfill (its rechecks are done).
	r.ingest("2026-02-01T22:05:00Z",
		stTx{id: "e01", agency: "Агентство", amount: "40.00", currency: "USD", at: "2026-01-31T21:55:00Z"},
		stTx{id: "e02", agency: "beta", amount: "100", currency: "JPY", at: "2026-01-31T05:30:00Z"},
	)
	r.run("2026-02-01T22:05:00Z", map[string]any{"restated": float64(1), "late_items": float64(1)})
	bf, _ := r.cli(0, "run", "--backfill", "--from", "2026-01-31T05:00:00Z", "--to", "2026-01-31T06:00:00Z", "--now", "2026-02-01T22:10:00Z")
	if bf["restated"] != float64(1) {
		t.Fatalf("backfill: %v", bf)
	}
	r.wantStatus("2026-01", "final", 0)
	sum, feb = r.statement("2026-02")
	if sum["prior_period_adjustments"] != float64(3) {
		t.Fatalf("February: %v, want 3 adjustments", sum)
	}
	for k, want := range map[string]string{"acme/USD": "0.75", "gamma/BHD": "0.200", "Агентство/USD": "4.00", "beta/JPY": "12"} {
		if got := feb[k].PriorPeriodAdjustments; got != want {
			t.Errorf("February %s prior_period_adjustments %q, want %q (%+v)", k, got, want, feb[k])
		}
	}
	r.wantAdjustments("2026-02", []stAdj{
		{"2026-01-31T05:00:00Z", 1, 2, "backfill"},
		{"2026-01-31T10:00:00Z", 1, 2, "recheck"},
		{"2026-01-31T21:00:00Z", 2, 3, "recheck"},
	})
	r.check("step 6")

	// verify --repair of a period of the final January (an object of
	// 10:00Z's revision 2 lost) restores it without a new revision: no
	// adjustment is booked, no month changes.
	feb2 := r.h.read(r.h.sink(), report.MonthManifestKey("2026-02"))
	var victim string
	for k := range h.objects() {
		if strings.HasPrefix(k, "agencies/agency=acme/period=20260131T1000Z/") {
			victim = k
		}
	}
	if err := h.sink().Delete(t.Context(), victim); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.cli(exitDiffers, "verify", "--from", "2026-01-31T10:00:00Z", "--to", "2026-01-31T11:00:00Z", "--repair",
		"--now", "2026-02-01T22:12:00Z"); v["repaired"] != float64(1) {
		t.Fatalf("verify --repair: %v", v)
	}
	if got := r.h.read(r.h.sink(), report.MonthManifestKey("2026-02")); string(got) != string(feb2) {
		t.Errorf("a repair that restored an object changed February's statements")
	}
	r.check("step 6b")

	// Step 7: nothing due, nothing changes.
	before := h.objects()
	r.run("2026-02-01T22:15:00Z", map[string]any{"status": "nothing_due"})
	if after := h.objects(); !mapsEqual(before, after) {
		t.Errorf("a run with nothing due changed the sink")
	}
	r.check("step 7")
}

// stAdj is an expected adjustments entry of a month manifest.
type stAdj struct {
	period   string
	from, to int
	reason   string
}

func (r *stRunner) wantAdjustments(m string, want []stAdj) {
	r.t.Helper()
	man := r.monthManifest(m)
	var got []stAdj
	for _, a := range man.Adjustments {
		got = append(got, stAdj{a.PeriodStart.UTC().Format(time.RFC3339), a.FromRevision, a.ToRevision, a.Reason})
		if a.PeriodMonth != "2026-01" || len(a.Commission) == 0 || !strings.HasPrefix(a.Key, "manifests/period=") || len(a.SHA256) != 64 ||
			len(a.Digest) != 64 {
			r.t.Errorf("%s adjustment %+v: want period_month 2026-01, commission, key, sha256 and digest", m, a)
		}
	}
	slices.SortFunc(got, func(x, y stAdj) int { return strings.Compare(x.period, y.period) })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		r.t.Errorf("%s adjustments %v, want %v", m, got, want)
	}
}

// monthManifest reads month m's manifest.
func (r *stRunner) monthManifest(m string) *monthclose.Manifest {
	r.t.Helper()
	man, err := monthclose.ParseManifest(r.h.read(r.h.sink(), report.MonthManifestKey(m)))
	if err != nil {
		r.t.Fatal(err)
	}
	return man
}

// check runs every check after a step, and checks that each final month
// is byte for byte what it was when it was closed.
func (r *stRunner) check(step string) {
	r.t.Helper()
	objs := r.h.objects()
	mans := stCheckObjects(r.t, r.h, objs)
	for m, man := range mans {
		if !man.Final() {
			continue
		}
		got := stMonthObjects(objs, m, man)
		if prev, ok := r.final[m]; !ok {
			r.final[m] = got
		} else if !mapsEqual(prev, got) {
			r.t.Errorf("%s: final month %s changed: %v, was %v", step, m, got, prev)
		}
	}
	for m := range r.final {
		if mans[m] == nil || !mans[m].Final() {
			r.t.Errorf("%s: final month %s is gone or draft again", step, m)
		}
	}
	stCheckTotals(r.t, r.h, objs, mans, stZone)
	if r.t.Failed() {
		r.t.Fatalf("checks failed after %s", step)
	}
}

// stMonthObjects is month m's manifest and files: key -> sha256.
func stMonthObjects(objs map[string]string, m string, man *monthclose.Manifest) map[string]string {
	out := map[string]string{report.MonthManifestKey(m): objs[report.MonthManifestKey(m)]}
	for _, f := range man.Files {
		out[f.Key] = objs[f.Key]
	}
	return out
}

// TestStatementsDSTEmbedded: statements in Europe/Paris across the switch
// to summer time (2026-03-29T01:00Z) and the end of March, which is then
// at 22:00Z (midnight CEST): items on either side of both land in the
// right day and month, March closes on time (close_after 1h, its one
// recheck done) in the run that delivers April's first periods, and the
// day rows follow the zone's calendar.
func TestStatementsDSTEmbedded(t *testing.T) {
	h := newHarness(t, harnessOptions{start: "2026-03-29",
		top: e2eCommissionYAML + "\nstatements: {timezone: Europe/Paris, close_after: 1h, agency_files: [csv]}"})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-04-01T00:05:00Z",
		stTx{id: "m1", agency: "acme", amount: "10.00", currency: "EUR", at: "2026-03-29T00:30:00Z"}, // 01:30 CET, March 29
		stTx{id: "m2", agency: "acme", amount: "20.00", currency: "EUR", at: "2026-03-29T01:30:00Z"}, // 03:30 CEST, March 29
		stTx{id: "m3", agency: "acme", amount: "30.00", currency: "EUR", at: "2026-03-29T22:30:00Z"}, // 00:30 CEST, March 30
		stTx{id: "m4", agency: "acme", amount: "40.00", currency: "EUR", at: "2026-03-31T21:30:00Z"}, // 23:30 CEST, March 31
		stTx{id: "a1", agency: "acme", amount: "50.00", currency: "EUR", at: "2026-03-31T22:30:00Z"}, // 00:30 CEST, April 1
	)
	r.run("2026-04-01T00:05:00Z", map[string]any{"periods_processed": float64(72)})
	_, mar := r.statement("2026-03")
	r.wantStatus("2026-03", "final", 0)
	_, apr := r.statement("2026-04")
	r.wantStatus("2026-04", "draft", 1)
	if l := mar["acme/EUR"]; l.PurchaseCount != 4 || l.Net != "100.00" || l.CommissionDue != "10.00" {
		t.Errorf("March: %+v", l)
	}
	if l := apr["acme/EUR"]; l.PurchaseCount != 1 || l.Net != "50.00" {
		t.Errorf("April: %+v", l)
	}
	man := r.monthManifest("2026-03")
	if man.MonthEnd.UTC().Format(time.RFC3339) != "2026-03-31T22:00:00Z" || len(man.Periods) != 70 || man.Reason != "close" {
		t.Errorf("March's manifest: ends %s, %d periods, reason %q; want 2026-03-31T22:00:00Z, 70, close",
			man.MonthEnd.UTC().Format(time.RFC3339), len(man.Periods), man.Reason)
	}
	var csvKey string
	for k := range h.objects() {
		if strings.HasPrefix(k, "agencies/agency=acme/month=2026-03/") && strings.HasSuffix(k, ".csv") {
			csvKey = k
		}
	}
	var days []string
	for _, line := range strings.Split(string(h.read(h.sink(), csvKey)), "\n") {
		if f := strings.Split(line, ","); len(f) > 18 && f[5] == "day" {
			days = append(days, f[6]+"="+f[18])
		}
	}
	if got := strings.Join(days, " "); got != "2026-03-29=30.00 2026-03-30=30.00 2026-03-31=40.00" {
		t.Errorf("March's day rows (date=net): %s", got)
	}
	objs := h.objects()
	stCheckTotals(t, h, objs, stCheckObjects(t, h, objs), "Europe/Paris")
}

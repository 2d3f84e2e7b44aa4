//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// TestRepriceRestatesOnlyChangedPrices (issue 31, point 3; SPEC section
// 3): `verify --repair --reprice` restates only the periods whose prices
// change. Daily periods from 2026-01-29, statements in UTC; acme bills
// 100.00 USD on 01-29, 01-30 and 01-31 are empty; January is closed
// (final).
//
//  1. A rate for an agency with no transactions (nobody: 1500): the
//     reprice changes no price, so every period keeps revision 1 and
//     nothing is booked in February.
//  2. default_bps 1000 -> 900: only 01-29 is restated (revision 2,
//     reason reprice), booked in February as -1.00.
//  3. A late item of nobody in 01-30, found by verify --repair: priced
//     at today's 1500 bps (a transaction new to the period), booked in
//     February as +3.00.
//
// After each step the statement checks hold (stCheckTotals: the sum of
// all statements equals the latest period summaries).
//
//	go test ./cmd/reportjob -run TestRepriceRestatesOnlyChangedPrices -v
func TestRepriceRestatesOnlyChangedPrices(t *testing.T) {
	h := procHarness(t, "embedded", harnessOptions{period: "24h", start: "2026-01-29",
		top: "commission: {default_bps: 1000}\nstatements: {timezone: UTC, agency_files: [csv]}"})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-02-01T00:05:00Z", stTx{id: "r1", agency: "acme", amount: "100.00", currency: "USD", at: "2026-01-29T10:00:00Z"})
	r.run("2026-02-01T00:05:00Z", map[string]any{"periods_processed": float64(3), "checkpoint": "2026-02-01T00:00:00Z"})
	r.cli(0, "statement", "--close", "--month", "2026-01", "--now", "2026-02-01T00:06:00Z")
	r.wantStatus("2026-01", "final", 0)
	r.check("January closed")
	revisions := func(step string, want ...int) {
		t.Helper()
		for i, day := range []string{"2026-01-29", "2026-01-30", "2026-01-31"} {
			start := opsTime(day + "T00:00:00Z")
			p := report.Period{Start: start, End: start.AddDate(0, 0, 1)}
			m, err := report.ParseManifest(h.read(h.sink(), report.ManifestKey(p)))
			if err != nil {
				t.Fatal(err)
			}
			if m.Revision != want[i] {
				t.Errorf("%s: %s is at revision %d (reason %s), want %d", step, day, m.Revision, m.Reason, want[i])
			}
		}
	}
	reprice := func(step string, repriced float64) {
		t.Helper()
		sum, _ := r.cli(0, "verify", "--repair", "--reprice", "--from", "2026-01-29", "--to", "2026-02-01", "--now", "2026-02-01T00:10:00Z")
		if got, _ := sum["repriced"].(float64); got != repriced || sum["differ"] != float64(0) {
			t.Errorf("%s: verify --repair --reprice: %v, want %v repriced", step, sum, repriced)
		}
	}

	// 1. A rate that prices nothing of these periods.
	r.editConfig("commission: {default_bps: 1000}", "commission: {default_bps: 1000, agencies: {nobody: 1500}}")
	reprice("a rate for an agency with no transactions", 0)
	revisions("a rate for an agency with no transactions", 1, 1, 1)
	if _, ok := h.objects()[report.MonthManifestKey("2026-02")]; ok {
		r.wantAdjustments("2026-02", nil)
	}
	r.check("a rate for an agency with no transactions")

	// 2. A rate that changes 01-29's prices.
	r.editConfig("default_bps: 1000,", "default_bps: 900,")
	reprice("default_bps 900", 1)
	revisions("default_bps 900", 2, 1, 1)
	r.wantAdjustments("2026-02", []stAdj{{"2026-01-29T00:00:00Z", 1, 2, report.ReasonReprice}})
	r.check("default_bps 900")

	// 3. A late item in 01-30, which kept revision 1 (and the rates it
	// records): a transaction new to the period gets today's rates.
	r.ingest("2026-02-01T00:20:00Z", stTx{id: "late", agency: "nobody", amount: "20.00", currency: "USD", at: "2026-01-30T08:00:00Z"})
	if sum, _ := r.cli(exitDiffers, "verify", "--repair", "--from", "2026-01-30", "--to", "2026-01-31", "--now", "2026-02-01T00:25:00Z"); sum["status"] != "repaired" {
		t.Errorf("verify --repair of the late item: %v", sum)
	}
	revisions("late item", 2, 2, 1)
	var lines []string
	for k := range h.objects() {
		if strings.HasPrefix(k, "agencies/agency=nobody/period=20260130T0000Z/transactions-") {
			lines = append(lines, string(h.read(h.sink(), k)))
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "late,nobody,") || !strings.Contains(lines[0], ",3.00,1500,") {
		t.Errorf("the late item's line: %q, want it billed 3.00 at 1500 bps", lines)
	}
	r.wantAdjustments("2026-02", []stAdj{{"2026-01-29T00:00:00Z", 1, 2, report.ReasonReprice}, {"2026-01-30T00:00:00Z", 1, 2, report.ReasonRepair}})
	_, feb := r.statement("2026-02")
	if l := feb["acme/USD"]; l.PriorPeriodAdjustments != "-1.00" {
		t.Errorf("February's acme line: %+v, want -1.00 of prior-period adjustments", l)
	}
	if l := feb["nobody/USD"]; l.PriorPeriodAdjustments != "3.00" {
		t.Errorf("February's nobody line: %+v, want 3.00 of prior-period adjustments", l)
	}
	r.check("late item")
}

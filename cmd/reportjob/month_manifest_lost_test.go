//go:build linux

package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// TestMonthManifestLost: a final January whose period 01-30 was restated
// (booked in February) loses its month manifest. Its statements are never
// built again from the periods: before, verify --repair published January
// again as final revision 2 from the restated period (3.00) while February
// still booked the +2.00 adjustment: 5.00 on the statements for 3.00 of
// periods (review of issue 31). Now verify --repair and statement exit 1 naming
// the lost manifest and change nothing; with the manifest restored from a
// copy, verify is clean.
func TestMonthManifestLost(t *testing.T) {
	r, h := restatedFinalJanuary(t)

	key := report.MonthManifestKey("2026-01")
	path := filepath.Join(h.dir, "reports", filepath.FromSlash(key))
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	before := h.objects()
	for _, args := range [][]string{
		{"verify", "--repair", "--from", "2026-01-28", "--to", "2026-02-02", "--now", "2026-02-03T00:05:00Z"},
		{"statement", "--month", "2026-01"},
	} {
		sum, out := r.cli(1, args...)
		if e, _ := sum["error"].(string); !strings.Contains(e, "month manifest lost") || !strings.Contains(e, key) {
			t.Errorf("%s with January's manifest lost: %v\n%s", args[0], sum, out)
		}
		if after := h.objects(); !maps.Equal(before, after) {
			t.Errorf("%s with January's manifest lost changed the sink", args[0])
		}
	}
	if err := os.WriteFile(path, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	r.cli(0, "verify", "--from", "2026-01-28", "--to", "2026-02-02", "--now", "2026-02-03T00:15:00Z")
	r.wantStatus("2026-01", "final", 1)
}

// restatedFinalJanuary: daily periods; January final with 01-30 billed at
// 10.00, then restated by a backfill with a late 20.00 (booked in
// February's draft).
func restatedFinalJanuary(t *testing.T) (*stRunner, *harness) {
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-01-28",
		top: "statements: {timezone: UTC, close_after: 1d, agency_files: [pdf, csv, parquet]}"})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-01-31T00:00:00Z", stTx{id: "t1", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-30T10:00:00Z"})
	r.run("2026-02-03T00:00:00Z", nil)
	r.wantStatus("2026-01", "final", 1)
	r.ingest("2026-02-03T00:00:00Z", stTx{id: "t2", agency: "acme", amount: "20.00", currency: "USD", at: "2026-01-30T11:00:00Z"})
	r.cli(0, "run", "--backfill", "--from", "2026-01-30", "--to", "2026-01-31", "--now", "2026-02-03T00:00:00Z")
	return r, h
}

// TestFinalMonthTotalsCheckedAfterRestatement: a final month whose period
// was restated since is not rebuilt from its periods; verify still checks
// the totals its manifest records against its own statements file. Before,
// an altered commission_due in January's manifest passed as "ok ... equals
// its periods and adjustments" (review of issue 31).
func TestFinalMonthTotalsCheckedAfterRestatement(t *testing.T) {
	r, h := restatedFinalJanuary(t)
	r.cli(0, "verify", "--from", "2026-01-28", "--to", "2026-02-02", "--now", "2026-02-03T00:05:00Z")
	path := filepath.Join(h.dir, "reports", filepath.FromSlash(report.MonthManifestKey("2026-01")))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	altered := strings.Replace(string(raw), `"commission_due": "1.00"`, `"commission_due": "1.01"`, 1)
	if altered == string(raw) {
		t.Fatalf("no commission_due 1.00 in January's manifest:\n%s", raw)
	}
	if err := os.WriteFile(path, []byte(altered), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out := r.cli(4, "verify", "--from", "2026-01-28", "--to", "2026-02-02", "--now", "2026-02-03T00:10:00Z")
	if !strings.Contains(out, "its statements file adds up to") {
		t.Errorf("verify of January with altered totals:\n%s", out)
	}
}

// TestPeriodManifestLostAfterRestatement: 01-30 is at revision 2, booked
// in February ("1 -> 2"), when its manifest is lost. A rebuild would
// publish it as revision 1 again, and the next restatement as revision 2,
// which February has booked already: never booked. Before, verify
// --repair did that and 5.00 USD of commission reached no statement
// (review of issue 31). Now the repair, and a backfill, leave the period as
// it is and say to restore its manifest; restored, verify is clean.
func TestPeriodManifestLostAfterRestatement(t *testing.T) {
	r, h := restatedFinalJanuary(t)
	p := report.Period{Start: time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)}
	path := filepath.Join(h.dir, "reports", filepath.FromSlash(report.ManifestKey(p)))
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	before := h.objects()
	sum, out := r.cli(4, "verify", "--repair", "--from", "2026-01-28", "--to", "2026-02-02", "--now", "2026-02-03T00:05:00Z")
	if sum["not_repairable"] != float64(1) || !strings.Contains(out, "statements account for its revision 2") {
		t.Errorf("verify --repair of 01-30 without its manifest: %v\n%s", sum, out)
	}
	sum, _ = r.cli(1, "run", "--backfill", "--from", "2026-01-30", "--to", "2026-01-31", "--now", "2026-02-03T00:10:00Z")
	if e, _ := sum["error"].(string); !strings.Contains(e, "not repairable") {
		t.Errorf("backfill of 01-30 without its manifest: %v", sum)
	}
	if after := h.objects(); !maps.Equal(before, after) {
		t.Errorf("the repair or the backfill of 01-30 without its manifest changed the sink")
	}
	if err := os.WriteFile(path, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	r.cli(0, "verify", "--from", "2026-01-28", "--to", "2026-02-02", "--now", "2026-02-03T00:15:00Z")
}

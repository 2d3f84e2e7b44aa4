package main

import (
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// TestVerifyReprice drives the binary's CLI: tx-1 billed at 1000 bps;
// commission.default_bps lowered to 900 (the environment over the file's
// dated list); a late item; the recheck keeps tx-1 at 10.00 (the rate it
// was billed at) and adds the late item, never billed, at today's 900 bps:
// 3.15 only. verify --repair finds nothing to do; --reprice
// without --repair is bad usage (exit 2); verify --repair --reprice
// publishes a revision at 900 bps whose reason says so, and verify is
// clean (exit 0) after it.
func TestVerifyReprice(t *testing.T) {
	h := newHarness(t, harnessOptions{top: `commission: {default_bps: [{bps: 1000}, {bps: 700, from: "2030-01-01"}]}`})
	ingest := func(lines ...string) {
		t.Helper()
		h.mustRun(0, "ingest", "--file", h.writeFile("items.jsonl", strings.Join(lines, "\n")+"\n"),
			"--now", "2024-03-01T02:00:00Z", "--allow-late")
	}
	ingest(`{"transaction_id":"tx-1","agency_id":"acme","amount":"100.00","currency":"USD","recorded_at":"2024-03-01T00:05:00Z"}`)
	h.mustRun(0, "run", "--now", "2024-03-01T01:02:00Z")
	ingest(`{"transaction_id":"tx-late","agency_id":"acme","amount":"35.00","currency":"USD","recorded_at":"2024-03-01T00:40:00Z"}`)
	h.env = append(h.env, "REPORTJOB_COMMISSION_DEFAULT_BPS=900")
	if sum := h.mustRun(0, "run", "--now", "2024-03-01T02:02:00Z"); sum["restated"] != float64(1) {
		t.Fatalf("recheck run: %v", sum)
	}
	adjustments := func() string {
		t.Helper()
		var out []string
		for k := range h.objects() {
			if strings.Contains(k, "agency=acme/period=20240301T0000Z/adjustments-") {
				out = append(out, string(h.read(h.sink(), k)))
			}
		}
		return strings.Join(out, "")
	}
	if adj := adjustments(); !strings.Contains(adj, "acme,USD,1,0,35.00,0.00,35.00,3.15,2") {
		t.Errorf("recheck adjustments are not the late item's alone:\n%s", adj)
	}
	h.mustRun(0, "verify", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T02:00:00Z", "--repair", "--now", "2024-03-01T03:00:00Z")
	h.mustRun(2, "verify", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T02:00:00Z", "--reprice")
	sum := h.mustRun(0, "verify", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T02:00:00Z", "--repair", "--reprice",
		"--now", "2024-03-01T03:00:00Z")
	if sum["repriced"] != float64(1) || sum["differ"] != float64(0) {
		t.Errorf("verify --repair --reprice: %v", sum)
	}
	m, err := report.ParseManifest(h.read(h.sink(), report.ManifestKey(report.Period{Start: at(0, 0, 0), End: at(1, 0, 0)})))
	if err != nil {
		t.Fatal(err)
	}
	if m.Revision != 3 || m.Reason != report.ReasonReprice || m.Rates == nil || len(m.Rates.Default) != 1 || m.Rates.Default[0].BPS != 900 {
		t.Errorf("repriced manifest: revision %d reason %q rates %+v", m.Revision, m.Reason, m.Rates)
	}
	if adj := adjustments(); !strings.Contains(adj, "acme,USD,0,0,0.00,0.00,0.00,-1.00,3") {
		t.Errorf("reprice adjustments:\n%s", adj)
	}
	h.mustRun(0, "verify", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T02:00:00Z", "--now", "2024-03-01T03:00:00Z")
}

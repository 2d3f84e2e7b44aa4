//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// Issue 31, point 2 and the adjustment-only agency, through the built
// binary on the embedded store: daily periods, statements in UTC with PDF,
// CSV and Parquet. January is final; then 2026-01-30 is restated by a
// backfill (a late item of acme and one of delta, an agency January never
// had), booked in February as prior-period adjustments. Then January loses
// objects, and verify --repair restores them from January's own objects,
// byte for byte, although 01-30 is at revision 2 now:
//
//	acme's PDF             from acme's statement CSV and the month manifest
//	the statements Parquet from the agencies' CSVs
//	February, final with its adjustment: its adjustments file and delta's
//	                       PDF, from the agencies' CSVs
//	acme's PDF, CSV and Parquet: the Parquet comes back from the statements
//	                       Parquet; the PDF and CSV cannot, and are named (exit 4,
//	                       not_repairable), without "the reportjob that wrote them"
//	                       advice (it is the running one) and with nothing queued
//
// After every step: the sum of all statements equals the latest period
// summaries (stCheckTotals), and every statement object is listed. delta's
// February statement names 01-30 revision 2 and its digest in its audit
// chain (CSV and PDF).
func TestFinalMonthRepairAfterRestatement(t *testing.T) {
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-01-28", extra: frReportYAML, top: frTopYAML})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-02-02T00:00:00Z",
		stTx{id: "f1", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-29T05:00:00Z"},
		stTx{id: "f2", agency: "beta", amount: "20.00", currency: "EUR", at: "2026-01-30T06:00:00Z"},
		stTx{id: "f3", agency: "acme", amount: "30.00", currency: "USD", at: "2026-01-31T07:00:00Z"},
	)
	r.run("2026-02-02T00:05:00Z", nil)
	r.run("2026-02-02T02:05:00Z", nil)
	r.wantStatus("2026-01", "final", 0)
	frCheck(r, "January final")

	r.ingest("2026-02-03T00:00:00Z",
		stTx{id: "f4", agency: "acme", amount: "5.00", currency: "USD", at: "2026-01-30T08:00:00Z"},
		stTx{id: "f5", agency: "delta", amount: "7.00", currency: "USD", at: "2026-01-30T09:00:00Z"},
	)
	r.cli(0, "run", "--backfill", "--from", "2026-01-30T00:00:00Z", "--to", "2026-01-31T00:00:00Z", "--now", "2026-02-03T00:05:00Z")
	if adj := r.monthManifest("2026-02").Adjustments; len(adj) != 1 || adj[0].ToRevision != 2 || adj[0].Digest == "" {
		t.Fatalf("February adjustments %+v, want 01-30 revision 2 with its digest", adj)
	}
	frCheck(r, "01-30 restated, booked in February")
	frCheckAdjustmentOnly(r, "delta")

	jan := r.monthManifest("2026-01")
	key := func(prefix, suffix string) string {
		t.Helper()
		for _, f := range jan.Files {
			if strings.HasPrefix(f.Key, prefix) && strings.HasSuffix(f.Key, suffix) {
				return f.Key
			}
		}
		t.Fatalf("January lists no %s*%s", prefix, suffix)
		return ""
	}
	acme := report.AgencyMonthPrefix("acme", "2026-01")
	pdf, csvKey, pq := key(acme, ".pdf"), key(acme, ".csv"), key(acme, ".parquet")
	stmts := key(report.StatementsPrefix("2026-01"), ".parquet")
	before := h.objects()
	remove := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if err := h.sink().Delete(context.Background(), k); err != nil {
				t.Fatal(err)
			}
		}
	}
	verify := []string{"verify", "--from", "2026-01-28T00:00:00Z", "--to", "2026-02-03T00:00:00Z", "--now", "2026-02-03T01:00:00Z"}
	repair := append(append([]string{}, verify...), "--repair")
	for _, lost := range [][]string{{pdf}, {stmts}, {pdf, stmts}} {
		remove(lost...)
		sum, out := r.cli(exitDiffers, repair...)
		if sum["status"] != "repaired" || strings.Contains(out, "queued") || strings.Contains(out, "NOT repairable") {
			t.Fatalf("verify --repair, %v lost: %v\n%s", lost, sum, out)
		}
		for _, k := range lost {
			if got := h.objects()[k]; got != before[k] {
				t.Fatalf("%s after the repair: sha256 %q, want %q (the bytes January listed)", k, got, before[k])
			}
		}
		r.cli(0, verify...)
		frCheck(r, fmt.Sprintf("%v restored", lost))
	}

	// February, with its prior-period adjustments, final too: its lost
	// adjustments file and delta's PDF come back from the agencies' CSVs.
	r.run("2026-03-01T00:05:00Z", nil)
	r.cli(0, "statement", "--close", "--month", "2026-02", "--now", "2026-03-01T00:06:00Z")
	feb := r.monthManifest("2026-02")
	if !feb.Final() || len(feb.Adjustments) != 1 {
		t.Fatalf("February: %s with %d adjustments, want final with 1", feb.Status, len(feb.Adjustments))
	}
	frCheck(r, "February final")
	var febLost []string
	for _, f := range feb.Files {
		if strings.HasPrefix(f.Key, report.MonthManifestPrefix("2026-02")+"adjustments-") ||
			strings.HasPrefix(f.Key, report.AgencyMonthPrefix("delta", "2026-02")) && strings.HasSuffix(f.Key, ".pdf") {
			febLost = append(febLost, f.Key)
		}
	}
	if len(febLost) != 2 {
		t.Fatalf("February's adjustments file and delta's PDF: %v", febLost)
	}
	febBefore := h.objects()
	remove(febLost...)
	febVerify := []string{"verify", "--from", "2026-01-28T00:00:00Z", "--to", "2026-03-01T00:00:00Z", "--now", "2026-03-01T01:00:00Z"}
	if sum, out := r.cli(exitDiffers, append(febVerify, "--repair")...); sum["status"] != "repaired" || strings.Contains(out, "NOT repairable") {
		t.Fatalf("verify --repair, February's adjustments file and delta's PDF lost: %v\n%s", sum, out)
	}
	for _, k := range febLost {
		if got := h.objects()[k]; got != febBefore[k] {
			t.Errorf("%s after the repair: sha256 %q, want %q", k, got, febBefore[k])
		}
	}
	r.cli(0, febVerify...)
	frCheck(r, "February restored")

	remove(pdf, csvKey, pq)
	for range 2 {
		sum, out := r.cli(exitDiffers, repair...)
		if sum["status"] != "differs" || !strings.Contains(out, "NOT repairable") || !strings.Contains(out, pdf) ||
			!strings.Contains(out, csvKey) || strings.Contains(out, "tool_version") || strings.Contains(out, "queued") {
			t.Fatalf("verify --repair, acme's PDF, CSV and Parquet lost: %v\n%s", sum, out)
		}
		if got := h.objects()[pq]; got != before[pq] {
			t.Errorf("acme's Parquet was not restored from the statements Parquet: %q, want %q", got, before[pq])
		}
		t.Logf("verify --repair, too much lost: %s", out)
	}
}

const (
	frReportYAML = "  recheck_after: [1h]\n  max_periods_per_run: 200"
	frTopYAML    = e2eCommissionYAML + "\nstatements: {timezone: UTC, close_after: 1d, agency_files: [pdf, csv, parquet]}"
)

// frCheck runs the statements' checks (every object listed, the sum of
// all statements equals the latest period summaries) and that each final
// month is byte for byte as it was closed.
func frCheck(r *stRunner, step string) {
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
			r.t.Errorf("%s: final month %s changed", step, m)
		}
	}
	stCheckTotals(r.t, r.h, objs, mans, "UTC")
	if r.t.Failed() {
		r.t.Fatalf("checks failed after %s", step)
	}
}

// frCheckAdjustmentOnly checks that agency, which February has only
// through the adjustment of 01-30, has that period, its revision and its
// digest in its CSV and its PDF's audit chain.
func frCheckAdjustmentOnly(r *stRunner, agency string) {
	r.t.Helper()
	feb := r.monthManifest("2026-02")
	adj := feb.Adjustments[0]
	var csvB, pdfB []byte
	for _, f := range feb.Files {
		if !strings.HasPrefix(f.Key, report.AgencyMonthPrefix(agency, "2026-02")) {
			continue
		}
		switch filepath.Ext(f.Key) {
		case ".csv":
			csvB = r.h.read(r.h.sink(), f.Key)
		case ".pdf":
			pdfB = r.h.read(r.h.sink(), f.Key)
		}
	}
	s, err := encode.ReadStatementCSV(strings.NewReader(string(csvB)), agency)
	if err != nil {
		r.t.Fatalf("%s's February CSV: %v", agency, err)
	}
	if len(s.Periods) != 0 || len(s.Adjustments) != 1 || s.Adjustments[0].Digest != adj.Digest || s.Adjustments[0].ToRevision != 2 {
		r.t.Errorf("%s's February CSV: periods %+v adjustments %+v, want the adjustment of revision 2 with digest %s",
			agency, s.Periods, s.Adjustments, adj.Digest)
	}
	name := filepath.Join(r.h.dir, agency+"-feb.pdf")
	if err := os.WriteFile(name, pdfB, 0o644); err != nil {
		r.t.Fatal(err)
	}
	out, err := exec.Command(testenv.RequireTool(r.t, "pdftotext", "the restored PDF's text"), "-layout", name, "-").Output()
	if err != nil {
		r.t.Fatalf("pdftotext: %v", err)
	}
	text := string(out)
	if strings.Contains(text, "No periods.") || !strings.Contains(text, adj.Digest) || !strings.Contains(text, "20260130T0000Z") {
		r.t.Errorf("%s's February PDF: want its audit chain to name 20260130T0000Z and digest %s:\n%s", agency, adj.Digest, text)
	}
}

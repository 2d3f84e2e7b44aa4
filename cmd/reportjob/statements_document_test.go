//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// TestStatementDocumentsEmbedded (issue 32, points 1 and 4): the close
// with an agency directory and an issuer, through the built binary. The
// agency CSV, its Parquet and the statements Parquet carry the same
// statement_number per agency; `statement --number` finds it (and says
// not_found for an unknown number or another prefix); numbers stay across
// draft revisions and into the final; the agency the directory lacks is
// counted in the run summary; a directory change shows in the next draft
// and not in the final; acme's dated rate change shows as two rate lines;
// a bad directory row stops the close (exit 2) naming file, row and field,
// and writes no statement.
func TestStatementDocumentsEmbedded(t *testing.T) {
	top := `commission: {default_bps: 1000, agencies: {acme: [{bps: 1200}, {bps: 1100, from: "2026-01-31T12:00:00Z"}]}}
statements:
  timezone: UTC
  close_after: 1d
  agency_files: [pdf, csv, parquet]
  directory: agencies.csv
  issuer: {legal_name: "Billing Co Ltd", address: ["1 Main Street", "London"], payment_terms: 30d, payment_instructions: "IBAN GB00", number_prefix: BILL}`
	h := newHarness(t, harnessOptions{start: "2026-01-31", top: top})
	dirFile := filepath.Join(h.dir, "agencies.csv")
	writeDir := func(rows string) {
		t.Helper()
		if err := os.WriteFile(dirFile, []byte("agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n"+rows), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeDir("acme,ACME Voyages SARL,\"1 rue de la Paix\n75002 Paris\",FR,FR40123456789,compta@acme.example,fr-FR,15d\n" +
		"beta,Beta Reisen GmbH,Hauptstr. 1,DE,DE123456789,,de-DE,\n")
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-01-31T22:05:00Z",
		stTx{id: "a1", agency: "acme", amount: "100.00", currency: "EUR", at: "2026-01-31T05:10:00Z"},
		stTx{id: "a2", agency: "acme", amount: "50.00", currency: "EUR", at: "2026-01-31T15:10:00Z"},
		stTx{id: "b1", agency: "beta", amount: "20.00", currency: "EUR", at: "2026-01-31T06:00:00Z"},
		stTx{id: "z1", agency: "zed", amount: "5.00", currency: "USD", at: "2026-01-31T07:00:00Z"},
	)
	sum := r.run("2026-01-31T22:05:00Z", nil)
	if sum["statements_unlisted_agencies"] != float64(1) {
		t.Errorf("run summary: statements_unlisted_agencies %v, want 1 (zed)", sum["statements_unlisted_agencies"])
	}
	if st, _ := r.cli(0, "status", "--json"); fmt.Sprint(st["open_months"]) != "[map[closes_at:2026-02-02T00:00:00Z month:2026-01 statement_revision:1 statements_unlisted_agencies:1 status:draft]]" {
		t.Errorf("status: open_months %v, want January with 1 unlisted agency", st["open_months"])
	}
	want := map[string]string{"acme": "BILL-202601-000001", "beta": "BILL-202601-000002", "zed": "BILL-202601-000003"}
	docNumbers(t, h, "2026-01", want)

	// statement --number.
	got, _ := r.cli(0, "statement", "--number", "BILL-202601-000002")
	if got["agency_id"] != "beta" || got["statement_number"] != "BILL-202601-000002" || got["month"] != "2026-01" || got["files"] == nil {
		t.Errorf("statement --number: %v", got)
	}
	for _, n := range []string{"BILL-202601-000009", "OTHER-202601-000001", "BILL-202602-000001"} {
		if got, _ := r.cli(exitUsage, "statement", "--number", n); got["status"] != "not_found" || !strings.Contains(fmt.Sprint(got["error"]), n) {
			t.Errorf("statement --number %s: %v, want not_found naming it", n, got)
		}
	}
	if got, _ := r.cli(exitUsage, "statement", "--number", "BILL-2026-1"); got["status"] != "bad_usage" {
		t.Errorf("a malformed number: %v", got)
	}

	// acme's rate lines: 12 % before 12:00Z, 11 % after.
	acme := docCSV(t, h, "acme", "2026-01")
	if !strings.Contains(acme, ",rate,2026-01-31,2026-01-31,,,,,EUR,1200,,,,,100.00,12.00,") ||
		!strings.Contains(acme, ",rate,2026-01-31,2026-01-31,,,,,EUR,1100,,,,,50.00,5.50,") {
		t.Errorf("acme's CSV without its two rate lines:\n%s", acme)
	}

	// The directory changes and a new agency arrives: the next draft
	// keeps the numbers, gives aaa the next one, and shows beta's new name.
	writeDir("acme,ACME Voyages SARL,,FR,,,fr-FR,15d\nbeta,Beta Reisen AG,,DE,,,de-DE,\n")
	r.ingest("2026-01-31T23:05:00Z", stTx{id: "n1", agency: "aaa", amount: "1.00", currency: "EUR", at: "2026-01-31T22:30:00Z"})
	r.run("2026-01-31T23:05:00Z", nil)
	want["aaa"] = "BILL-202601-000004"
	man := docNumbers(t, h, "2026-01", want)
	if man.StatementRevision != 2 || recipient(man, "beta") != "Beta Reisen AG" {
		t.Errorf("the next draft: revision %d, beta's recipient %q", man.StatementRevision, recipient(man, "beta"))
	}

	// Final: the numbers again, the close day as issue date.
	r.run("2026-02-01T00:05:00Z", nil)
	if got, _ := r.cli(0, "statement", "--close", "--month", "2026-01", "--now", "2026-02-01T00:10:00Z"); got["statement_status"] != "final" {
		t.Fatalf("close: %v", got)
	}
	man = docNumbers(t, h, "2026-01", want)
	if man.Document == nil || man.Document.IssueDate != "2026-02-01" {
		t.Errorf("final document record %+v, want issue date 2026-02-01", man.Document)
	}
	r.check("final")
	if got, _ := r.cli(0, "statement", "--number", "BILL-202601-000004"); got["agency_id"] != "aaa" || got["statement_status"] != "final" {
		t.Errorf("statement --number of the final: %v", got)
	}

	// Another directory change: the final does not move (r.check).
	writeDir("acme,Someone Else,,FR,,,fr-FR,15d\nbeta,Beta Reisen AG,,DE,,,de-DE,\n")
	r.ingest("2026-02-01T01:05:00Z", stTx{id: "f1", agency: "acme", amount: "2.00", currency: "EUR", at: "2026-02-01T00:30:00Z"})
	r.run("2026-02-01T01:05:00Z", nil)
	r.check("a directory change after the final")
	if recipient(r.monthManifest("2026-01"), "acme") != "ACME Voyages SARL" || recipient(r.monthManifest("2026-02"), "acme") != "Someone Else" {
		t.Errorf("acme's recipient: January %q, February %q", recipient(r.monthManifest("2026-01"), "acme"), recipient(r.monthManifest("2026-02"), "acme"))
	}

	// January's acme PDF lost: verify --repair makes it again from the
	// month's record (not from today's directory and issuer) byte for
	// byte.
	cfg, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, bytes.Replace(cfg, []byte("Billing Co Ltd"), []byte("Another Issuer Ltd"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	before := h.objects()
	var pdf string
	for _, f := range r.monthManifest("2026-01").Files {
		if strings.HasPrefix(f.Key, report.AgencyMonthPrefix("acme", "2026-01")) && strings.HasSuffix(f.Key, ".pdf") {
			pdf = f.Key
		}
	}
	if err := h.sink().Delete(t.Context(), pdf); err != nil {
		t.Fatal(err)
	}
	verify := []string{"verify", "--from", "2026-01-31T00:00:00Z", "--to", "2026-02-01T00:00:00Z", "--now", "2026-02-01T01:10:00Z"}
	if sum, out := r.cli(exitDiffers, append(verify, "--repair")...); sum["status"] != "repaired" || strings.Contains(out, "NOT repairable") {
		t.Fatalf("verify --repair of January's lost PDF: %v\n%s", sum, out)
	}
	if got := h.objects()[pdf]; got == "" || got != before[pdf] {
		t.Errorf("January's acme PDF after the repair: sha256 %q, want %q", got, before[pdf])
	}
	r.cli(0, verify...)

	// A bad row: the close stops, names it, and writes no statement.
	writeDir("acme,ACME,,FR,,,fr-FR,15d\nbeta,Beta,,DE,,,not a locale!,\n")
	febBefore := string(h.read(h.sink(), report.MonthManifestKey("2026-02")))
	r.ingest("2026-02-01T02:05:00Z", stTx{id: "f2", agency: "beta", amount: "3.00", currency: "EUR", at: "2026-02-01T01:30:00Z"})
	out := procRun(t, r.bin, h, nil, "run", "--now", "2026-02-01T02:05:00Z")
	bad := lastJSON(t, out.stdout)
	if out.code != exitUsage || bad["status"] != "bad_usage" || !strings.Contains(fmt.Sprint(bad["error"]), "agencies.csv") ||
		!strings.Contains(fmt.Sprint(bad["error"]), "row 3") || !strings.Contains(fmt.Sprint(bad["error"]), "locale") {
		t.Errorf("a bad directory row: exit %d %v, want exit 2 naming agencies.csv, row 3, locale", out.code, bad)
	}
	if bad["checkpoint"] != "2026-02-01T02:00:00Z" {
		t.Errorf("the periods of the run are delivered all the same: %v", bad)
	}
	if got := string(h.read(h.sink(), report.MonthManifestKey("2026-02"))); got != febBefore {
		t.Error("February's statements changed with a bad directory")
	}
	// The next run stops at its first close, before delivering anything;
	// once the directory is fixed, the statements catch up.
	out = procRun(t, r.bin, h, nil, "run", "--now", "2026-02-01T03:05:00Z")
	if bad = lastJSON(t, out.stdout); out.code != exitUsage || bad["periods_processed"] != float64(0) {
		t.Errorf("the next run with the bad directory: exit %d %v, want exit 2 and nothing delivered", out.code, bad)
	}
	writeDir("acme,ACME,,FR,,,fr-FR,15d\nbeta,Beta,,DE,,,de-DE,\n")
	// Two closes publish: the one at the start takes in the period the
	// failed run delivered, the one at the end the period this run does.
	if sum := r.run("2026-02-01T03:05:00Z", nil); sum["periods_processed"] != float64(1) || sum["statements_issued"] != float64(2) {
		t.Errorf("the run after the fix: %v", sum)
	}
	if recipient(r.monthManifest("2026-02"), "beta") != "Beta" {
		t.Errorf("February after the fix: beta is %q", recipient(r.monthManifest("2026-02"), "beta"))
	}
	r.check("after the fix")
}

// docNumbers checks that month m's manifest, each agency's statement CSV
// and Parquet and the statements Parquet give each agency of want its
// number, and returns the manifest.
func docNumbers(t *testing.T, h *harness, m string, want map[string]string) *monthclose.Manifest {
	t.Helper()
	raw := h.read(h.sink(), report.MonthManifestKey(m))
	man, err := monthclose.ParseManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range man.Agencies {
		got[e.AgencyID] = e.Number
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s revision %d: numbers %v, want %v", m, man.StatementRevision, got, want)
	}
	for _, f := range man.Files {
		if !strings.HasSuffix(f.Key, ".parquet") || strings.HasPrefix(f.Key, report.MonthManifestPrefix(m)) {
			continue
		}
		b := h.read(h.sink(), f.Key)
		rows, err := encode.ReadStatementsParquet(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", f.Key, err)
		}
		for _, r := range rows {
			if r.StatementNumber != want[r.AgencyID] {
				t.Errorf("%s: %s has number %q, want %q", f.Key, r.AgencyID, r.StatementNumber, want[r.AgencyID])
			}
		}
	}
	for agency, n := range want {
		s, err := encode.ReadStatementCSV(strings.NewReader(docCSV(t, h, agency, m)), agency)
		if err != nil || s.Doc.Number != n {
			t.Errorf("%s's CSV of %s: number %q (%v), want %q", agency, m, s.Doc.Number, err, n)
		}
	}
	return man
}

// docCSV returns agency's statement CSV of month m.
func docCSV(t *testing.T, h *harness, agency, m string) string {
	t.Helper()
	for k := range h.objects() {
		if strings.HasPrefix(k, report.AgencyMonthPrefix(agency, m)) && strings.HasSuffix(k, ".csv") {
			return string(h.read(h.sink(), k))
		}
	}
	t.Fatalf("no statement CSV of %s in %s", agency, m)
	return ""
}

// recipient returns agency's recorded recipient legal name in man.
func recipient(man *monthclose.Manifest, agency string) string {
	for _, e := range man.Agencies {
		if e.AgencyID == agency && e.Recipient != nil {
			return e.Recipient.LegalName
		}
	}
	return ""
}

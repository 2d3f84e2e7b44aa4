package monthclose_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// numbers returns each agency's statement number in month m's manifest,
// and its retired numbers as "id=number".
func (f *fixture) numbers(m string) (map[string]string, []string) {
	f.t.Helper()
	man := f.statement(m).Manifest
	out := map[string]string{}
	for _, e := range man.Agencies {
		out[e.AgencyID] = e.Number
	}
	var retired []string
	for _, r := range man.RetiredNumbers {
		retired = append(retired, r.AgencyID+"="+r.Number)
	}
	return out, retired
}

// agencyCSV reads agency's statement CSV of month m back.
func (f *fixture) agencyCSV(agency, m string) *statement.Agency {
	f.t.Helper()
	for _, k := range f.keys(report.AgencyMonthPrefix(agency, m)) {
		if strings.HasSuffix(k, ".csv") {
			s, err := encode.ReadStatementCSV(strings.NewReader(f.raw(k)), agency)
			if err != nil {
				f.t.Fatal(err)
			}
			return s
		}
	}
	f.t.Fatalf("no statement CSV of %s in %s", agency, m)
	return nil
}

// Numbers: the first revision numbers the agencies in id order; a later
// revision keeps them and gives a new agency the next one; an agency that
// drops out keeps its number reserved (and gets it back); the final keeps
// them all. The CSV and the statements Parquet carry them.
func TestStatementNumbers(t *testing.T) {
	f := newFixture(t)
	n := func(seq int) string { return statement.FormatNumber("j", "2026-01", seq) }
	f.publish(hour(0), report.ReasonDelivery, map[string]int64{"beta": 50, "acme": 100})
	f.mustUpdate(hour(1).Start, "")
	got, _ := f.numbers("2026-01")
	if got["acme"] != n(1) || got["beta"] != n(2) {
		t.Fatalf("first revision: %v", got)
	}
	f.publish(hour(1), report.ReasonDelivery, map[string]int64{"aaa": 10, "acme": 100})
	f.mustUpdate(hour(2).Start, "")
	if got, _ = f.numbers("2026-01"); got["aaa"] != n(3) || got["acme"] != n(1) || got["beta"] != n(2) {
		t.Fatalf("second revision: %v", got)
	}
	// beta's rows restated away: its number is retired, not given again.
	f.publish(hour(0), report.ReasonRecheck, map[string]int64{"acme": 100})
	f.publish(hour(2), report.ReasonDelivery, map[string]int64{"zed": 5})
	f.mustUpdate(hour(3).Start, "")
	got, retired := f.numbers("2026-01")
	if got["zed"] != n(4) || got["beta"] != "" || strings.Join(retired, ",") != "beta="+n(2) {
		t.Fatalf("beta dropped out: %v retired %v", got, retired)
	}
	f.publish(hour(3), report.ReasonDelivery, map[string]int64{"beta": 7})
	f.mustUpdate(hour(4).Start, "")
	if got, retired = f.numbers("2026-01"); got["beta"] != n(2) || len(retired) != 0 {
		t.Fatalf("beta back: %v retired %v", got, retired)
	}
	for h := 4; h < 23; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 1})
	}
	f.mustUpdate(hour(23).Start, "2026-01")
	final, _ := f.numbers("2026-01")
	if fmt.Sprint(final) != fmt.Sprint(got) || f.statement("2026-01").Manifest.Status != "final" {
		t.Fatalf("final: %v, want %v", final, got)
	}
	for _, r := range f.statement("2026-01").Rows {
		if r.StatementNumber != final[r.AgencyID] {
			t.Errorf("statements Parquet: %s has %q, want %q", r.AgencyID, r.StatementNumber, final[r.AgencyID])
		}
	}
	if s := f.agencyCSV("zed", "2026-01"); s.Doc.Number != n(4) {
		t.Errorf("zed's CSV: number %q", s.Doc.Number)
	}
}

// Rate lines: a dated change of an agency's rate shows as two lines, each
// with its base and commission; another agency has the default's; periods
// whose manifests record no table have an unknown rate.
func TestRateLines(t *testing.T) {
	f := newFixture(t)
	change := hour(10).Start
	f.rates = &pricing.Table{Default: pricing.Schedule{{BPS: 1000}},
		Agencies: map[string]pricing.Schedule{"acme": {{BPS: 1200}, {BPS: 1100, From: change}}}}
	for h := 0; h < 20; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 100, "beta": 10})
	}
	f.rates = nil
	f.publish(hour(20), report.ReasonDelivery, map[string]int64{"beta": 10})
	f.mustUpdate(hour(21).Start, "")
	day := statement.DayOf(hour(0).Start, fxLoc)
	want := map[string]string{
		"acme": fmt.Sprintf("[{USD 1200 %[1]s %[1]s 10000 1000} {USD 1100 %[1]s %[1]s 10000 1000}]", day),
		"beta": fmt.Sprintf("[{USD 1000 %[1]s %[1]s 2000 200} {USD -1 %[1]s %[1]s 100 10}]", day),
	}
	for agency, w := range want {
		s := f.agencyCSV(agency, "2026-01")
		var got []string
		for _, l := range s.Rates {
			got = append(got, fmt.Sprintf("{%s %d %s %s %s %s}", l.Currency.Code, l.BPS, l.From, l.To,
				l.Base.String(), l.Commission.String()))
		}
		if g := "[" + strings.Join(got, " ") + "]"; g != w {
			t.Errorf("%s's rate lines %s, want %s", agency, g, w)
		}
	}
}

// docRenderer renders a statement's document as text (the logo by size).
func docRenderer(w io.Writer, s *statement.Agency) error {
	d := s.Doc
	logo := len(d.Logo)
	d.Logo = nil
	_, err := fmt.Fprintf(w, "%s %s %+v logo %d", s.AgencyID, s.Status, d, logo)
	return err
}

func testDirectory(t *testing.T, csv string) func(context.Context) (*directory.Directory, error) {
	t.Helper()
	d, err := directory.Parse("agencies.csv", []byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context) (*directory.Directory, error) { return d, nil }
}

const testDirectoryCSV = "agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n" +
	"acme,ACME Voyages SARL,\"1 rue de la Paix\n75002 Paris\",FR,FR40123456789,compta@acme.example,fr-FR,15d\n"

// pdfOf returns agency's statement "PDF" (docRenderer's text) of month m.
func (f *fixture) pdfOf(agency, m string) (key, body string) {
	f.t.Helper()
	for _, k := range f.keys(report.AgencyMonthPrefix(agency, m)) {
		if strings.HasSuffix(k, ".pdf") {
			return k, f.raw(k)
		}
	}
	f.t.Fatalf("no PDF of %s in %s", agency, m)
	return "", ""
}

// Documents: a listed agency gets its entry, locale and own terms; an
// unlisted one its id, "en" and the issuer's terms, and is counted. A
// draft is dated as of its last period, a final on its close day. A
// directory change shows in the next draft revision, not in a final; a
// lost final PDF is made again from the month's record with the same
// bytes (today's directory and logo differ); a directory that cannot be
// read stops the close before anything is written.
func TestStatementDocuments(t *testing.T) {
	f := newFixture(t)
	f.c.Formats = monthclose.Formats{CSV: true, PDF: true}
	f.c.RenderPDF = docRenderer
	f.c.Docs = monthclose.Documents{Directory: testDirectory(t, testDirectoryCSV),
		Issuer:           statement.Party{LegalName: "Billing Co", Address: []string{"1 Main St"}, Country: "GB", Contact: "ar@billing.example"},
		PaymentTermsDays: 30, PaymentInstructions: "IBAN GB00 0000",
		Logo: func(context.Context) ([]byte, error) { return []byte("PNG-1"), nil }}

	// A bad directory: nothing is written.
	bad := errors.New("agencies.csv: row 3: locale: bad")
	good := f.c.Docs.Directory
	f.c.Docs.Directory = func(context.Context) (*directory.Directory, error) { return nil, bad }
	f.publish(hour(0), report.ReasonDelivery, map[string]int64{"acme": 100, "beta": 10})
	if _, err := f.update(hour(1).Start, ""); !errors.Is(err, bad) || !errors.Is(err, monthclose.ErrDocuments) {
		t.Fatalf("a bad directory: %v", err)
	}
	if ks := f.keys(report.MonthManifestPrefix("2026-01")); len(ks) != 0 {
		t.Fatalf("written with a bad directory: %v", ks)
	}
	f.c.Docs.Directory = good

	res := f.mustUpdate(hour(1).Start, "")
	if res.UnlistedAgencies != 1 {
		t.Errorf("unlisted %d, want 1 (beta)", res.UnlistedAgencies)
	}
	_, acme := f.pdfOf("acme", "2026-01")
	for _, want := range []string{"Number:j-202601-000001", "LegalName:ACME Voyages SARL Address:[1 rue de la Paix 75002 Paris] Country:FR TaxID:FR40123456789",
		"Listed:true Locale:fr-FR IssueDate:2026-01-31 DueDate:2026-02-15 PaymentTermsDays:15", "PaymentInstructions:IBAN GB00 0000", "logo 5"} {
		if !strings.Contains(acme, want) {
			t.Errorf("acme's draft: %s\nwant %q", acme, want)
		}
	}
	_, beta := f.pdfOf("beta", "2026-01")
	if !strings.Contains(beta, "Recipient:{LegalName:beta ") || !strings.Contains(beta, "Listed:false Locale:en IssueDate:2026-01-31 DueDate:2026-03-02 PaymentTermsDays:30") {
		t.Errorf("beta's draft: %s", beta)
	}

	// The directory changes: the next draft shows it, for acme too,
	// though its period did not change.
	f.c.Docs.Directory = testDirectory(t, strings.Replace(testDirectoryCSV, "ACME Voyages SARL", "ACME Voyages SAS", 1))
	f.publish(hour(1), report.ReasonDelivery, map[string]int64{"beta": 10})
	f.mustUpdate(hour(2).Start, "")
	if _, acme = f.pdfOf("acme", "2026-01"); !strings.Contains(acme, "ACME Voyages SAS") {
		t.Errorf("acme after the directory change: %s", acme)
	}
	for h := 2; h < 23; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 1})
	}
	closeAt := time.Date(2026, 2, 3, 9, 0, 0, 0, time.UTC)
	f.mustUpdate(closeAt, "2026-01")
	key, final := f.pdfOf("acme", "2026-01")
	if !strings.Contains(final, "final") || !strings.Contains(final, "IssueDate:2026-02-03 DueDate:2026-02-18") {
		t.Fatalf("acme's final: %s", final)
	}

	// Today's directory and logo differ; the final is made again as it was.
	f.c.Docs.Directory = testDirectory(t, strings.Replace(testDirectoryCSV, "ACME Voyages SARL", "Someone Else", 1))
	f.c.Docs.Logo = func(context.Context) ([]byte, error) { return []byte("PNG-2, another"), nil }
	checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false)
	if err != nil || checks[0].Differs() {
		t.Fatalf("verify of the final with another directory: %v %+v", err, checks)
	}
	if err := f.b.Delete(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true); err != nil {
		t.Fatal(err)
	}
	if got := f.raw(key); got != final {
		t.Errorf("restored final PDF:\n%s\nwant\n%s", got, final)
	}
	var buf bytes.Buffer
	buf.WriteString(f.raw(report.MonthManifestKey("2026-01")))
	if !strings.Contains(buf.String(), `"issue_date": "2026-02-03"`) {
		t.Errorf("month manifest without the final's issue date:\n%s", buf.String())
	}
}

// The month's logo object lost with a PDF: restored from the configured
// logo when it has the sha256 the month lists; named as lost when the
// configured logo is another one (the PDF with it).
func TestStatementLogoRestore(t *testing.T) {
	f := newFixture(t)
	f.c.Formats = monthclose.Formats{CSV: true, PDF: true}
	f.c.RenderPDF = docRenderer
	f.c.Docs = monthclose.Documents{Logo: func(context.Context) ([]byte, error) { return []byte("PNG-1"), nil }}
	f.january()
	pdf, body := f.pdfOf("acme", "2026-01")
	logos := f.keys(report.MonthManifestPrefix("2026-01") + "logo-")
	if len(logos) != 1 || f.raw(logos[0]) != "PNG-1" {
		t.Fatalf("the month's logo: %v", logos)
	}
	lose := func() {
		for _, k := range []string{pdf, logos[0]} {
			if err := f.b.Delete(f.ctx, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	lose()
	checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true)
	if err != nil || checks[0].NotRepairable != "" || f.raw(pdf) != body || f.raw(logos[0]) != "PNG-1" {
		t.Fatalf("repair with the same logo configured: %v %+v", err, checks)
	}
	lose()
	f.c.Docs.Logo = func(context.Context) ([]byte, error) { return []byte("PNG-2"), nil }
	checks, err = f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true)
	if err != nil || !strings.Contains(checks[0].NotRepairable, pdf) || !strings.Contains(checks[0].NotRepairable, logos[0]) {
		t.Fatalf("repair with another logo configured: %v %+v", err, checks)
	}
}

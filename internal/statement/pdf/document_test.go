package pdf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/locale"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
	"github.com/reportjob/reportjob/internal/testenv"
)

// Fonts from Debian packages (scripts/tools.sh installs them).
const (
	fontJa     = "/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf"         // fonts-ipafont-gothic
	fontCJK    = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf" // fonts-droid-fallback
	fontKo     = "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"           // fonts-nanum
	fontDejaVu = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"           // fonts-dejavu-core
)

// requireFont returns path, or skips the test when the file is missing
// (fails it under scripts/test.sh, RJTEST_REQUIRE_TOOLS or CI).
func requireFont(t testing.TB, path, pkg string) string {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if os.Getenv(testenv.EnvRequire) != "" || os.Getenv(testenv.EnvRequireTools) != "" || os.Getenv("CI") != "" {
		t.Fatalf("font %s missing: Debian package %s is required here (scripts/tools.sh installs it)", path, pkg)
	}
	t.Skipf("font %s missing (Debian package %s; scripts/tools.sh installs it)", path, pkg)
	return ""
}

// document is the realistic statement as a version 4 document: issuer,
// recipient, number, dates, terms, locale, a dated rate change in USD and
// a USD gross of 179,201.87.
func document(t testing.TB, tag, name string, address ...string) *statement.Agency {
	t.Helper()
	s := realistic(t, "agency-0001")
	s.Doc = statement.Document{
		Number: "ACME-202606-000001",
		Issuer: statement.Party{LegalName: "Acme Travel Billing SAS", Address: []string{"12 rue de la Paix", "75002 Paris"},
			Country: "FR", TaxID: "FR12345678901", Contact: "billing@acme.example"},
		Recipient: statement.Party{LegalName: name, Address: address, Country: "GB", TaxID: "GB123456789",
			Emails: []string{"accounts@agency.example"}},
		Listed: true, Locale: tag, IssueDate: "2026-06-30", DueDate: "2026-07-30", PaymentTermsDays: 30,
		PaymentInstructions: "IBAN FR76 3000 6000 0112 3456 7890 189 · BIC AGRIFRPP\nAcme Travel Billing SAS, Crédit Agricole Paris",
	}
	usd, jpy, bhd := currency(t, "USD"), currency(t, "JPY"), currency(t, "BHD")
	for i := range s.Lines {
		if s.Lines[i].Currency == usd {
			s.Lines[i].Gross = money.TotalOf(17920187)
		}
	}
	s.Rates = []statement.RateLine{
		{Currency: bhd, BPS: 800, From: "2026-06-01", To: "2026-06-30", Base: money.TotalOf(5123456), Commission: money.TotalOf(409876)},
		{Currency: jpy, BPS: 1000, From: "2026-06-01", To: "2026-06-30", Base: money.TotalOf(9456520), Commission: money.TotalOf(945652)},
		{Currency: usd, BPS: 1000, From: "2026-06-01", To: "2026-06-15", Base: money.TotalOf(8000000), Commission: money.TotalOf(800000)},
		{Currency: usd, BPS: 1250, From: "2026-06-16", To: "2026-06-30", Base: money.TotalOf(9920187), Commission: money.TotalOf(1240023)},
	}
	return s
}

// docCases are the statements of the golden file and of docs/statements/.
func docCases(t testing.TB) []struct {
	name  string
	s     *statement.Agency
	fonts []string
} {
	fr := document(t, "fr-FR", "Voyages Éloïse SARL", "8 cours de l’Intendance", "33000 Bordeaux")
	fr.Status, fr.ClosesAt = statement.Final, ""
	// A final is issued on its close day: June closes 3 days after its end
	// (close_after 3d); net 30 days from then.
	fr.Doc.Number = "ACME-202606-000002"
	fr.Doc.IssueDate, fr.Doc.DueDate = "2026-07-03", "2026-08-02"
	fr.Adjustments = fr.Adjustments[:1]
	fr.Doc.Recipient.Country = "FR"
	ja := document(t, "ja", "東京トラベル", "〒100-0005", "東京都千代田区丸の内1-1-1")
	ja.Doc.Recipient.Country = "JP"
	ja.Doc.Number = "ACME-202606-000003"
	return []struct {
		name  string
		s     *statement.Agency
		fonts []string
	}{
		{"en-draft", document(t, "en", "Sunrise Travel Ltd", "221B Baker Street", "London NW1 6XE"), nil},
		{"fr-final", fr, nil},
		{"ja", ja, []string{requireFont(t, fontJa, "fonts-ipafont-gothic")}},
	}
}

func renderWith(t testing.TB, fonts []string, s *statement.Agency) []byte {
	t.Helper()
	r, err := NewRenderer(fonts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Render(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDocumentGolden pins the bytes of the three documents of
// docs/statements.md; -update rewrites testdata/document.sha256 and their
// page 1 in docs/statements/.
func TestDocumentGolden(t *testing.T) {
	var got strings.Builder
	cases := docCases(t)
	// Each twice, all at once: the same bytes.
	outs := make([][]byte, 2*len(cases))
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() { outs[i] = renderWith(t, cases[i/2].fonts, cases[i/2].s) })
	}
	wg.Wait()
	for i, c := range cases {
		b := outs[2*i]
		if !bytes.Equal(b, outs[2*i+1]) {
			t.Errorf("%s: two renders differ", c.name)
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(&got, "%s %s\n", hex.EncodeToString(sum[:]), c.name)
		if *update {
			pngs := rasterise(t, writeTemp(t, c.name+".pdf", b), 60, "-f", "1", "-l", "1")
			png, err := os.ReadFile(pngs[0])
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join("..", "..", "..", "docs", "statements", c.name+".png")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden := filepath.Join("testdata", "document.sha256")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (go test -run TestDocumentGolden -update writes it): %v", err)
	}
	if got.String() != string(want) {
		t.Errorf("the documents changed; look at them, then -update:\ngot\n%swant\n%s", got.String(), want)
	}
}

// spaces makes the no-break spaces of French and other locales plain.
var spaces = strings.NewReplacer("\u00a0", " ", "\u202f", " ")

// TestDocumentText reads each document back with pdftotext as a person
// would: issuer, recipient, number, dates, terms, who pays whom, every
// amount and count as the locale writes it, the rate lines, page n of m on
// every page; pdftoppm renders every page.
func TestDocumentText(t *testing.T) {
	de := document(t, "de-DE", "Reisebüro Müller GmbH", "Königsallee 1", "40212 Düsseldorf")
	cases := append(docCases(t), struct {
		name  string
		s     *statement.Agency
		fonts []string
	}{"de-draft", de, nil})
	usd179 := map[string]string{"en-draft": "179,201.87", "fr-final": "179 201,87", "de-draft": "179.201,87", "ja": "179,201.87"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			l, err := locale.Parse(s.Doc.Locale)
			if err != nil {
				t.Fatal(err)
			}
			path := writeTemp(t, "s.pdf", renderWith(t, c.fonts, s))
			text := spaces.Replace(pdfText(t, path))
			flat := strings.Join(strings.Fields(text), " ")
			bare := strings.Join(strings.Fields(text), "") // a line may break between two ideographs
			doc := s.Doc
			wants := []string{doc.Issuer.LegalName, "FR12345678901", "billing@acme.example", doc.Recipient.LegalName,
				doc.Recipient.Address[len(doc.Recipient.Address)-1], doc.Number, "agency-0001",
				l.Date(doc.IssueDate), l.Date(doc.DueDate), l.TN("doc.terms_days", 30), l.Month(s.Month),
				"AGRIFRPP", usd179[c.name], l.T("sec.appendix"), l.Rate(1250), l.Rate(1000),
				l.T("rate.range", "from", l.Date("2026-06-16"), "to", l.Date("2026-06-30")),
				l.T("doc.owes", "payer", doc.Recipient.LegalName, "payee", doc.Issuer.LegalName,
					"amount", l.Money(s.Lines[0].Currency, s.Lines[0].CommissionDue), "date", l.Date(doc.DueDate)),
			}
			if s.Status == statement.Final {
				wants = append(wants, l.T("doc.final"), l.T("doc.issue_date"))
			} else {
				wants = append(wants, l.T("doc.draft"), l.T("doc.as_of"))
			}
			for _, w := range wants {
				if w = strings.Join(strings.Fields(spaces.Replace(w)), ""); !strings.Contains(bare, w) {
					t.Errorf("pdftotext output lacks %q", w)
				}
			}
			for _, a := range docAmounts(l, s) {
				if !strings.Contains(flat, spaces.Replace(a)) {
					t.Errorf("pdftotext output lacks the amount %q", a)
				}
			}
			for _, p := range s.Periods {
				if !strings.Contains(flat, p.Digest) || !strings.Contains(flat, p.Period.Name()) {
					t.Errorf("pdftotext output lacks period %s or its digest", p.Period.Name())
				}
			}
			if strings.Contains(text, "\u2212") {
				t.Errorf("a minus sign U+2212 in the text (hyphens must read as hyphens)")
			}
			for _, bad := range []string{"T00:00:00Z", "billing-prod", "The 1 periods", "{", "doc."} {
				if strings.Contains(flat, bad) {
					t.Errorf("pdftotext output has %q", bad)
				}
			}
			checkDocPages(t, l, path, flat)
		})
	}
}

// docAmounts is every amount and count of s's page 1 tables and rate
// lines, as the locale writes them.
func docAmounts(l *locale.Locale, s *statement.Agency) []string {
	var out []string
	for _, x := range s.Lines {
		c := x.Currency
		out = append(out, l.Int(x.PurchaseCount), l.Int(x.RefundCount), l.Amount(c, x.Gross), l.Amount(c, x.Refunds),
			l.Amount(c, x.Net), l.Amount(c, x.Commission), l.Amount(c, x.PriorPeriodAdjustments), l.Amount(c, x.CommissionDue))
	}
	for _, r := range s.Rates {
		out = append(out, l.Amount(r.Currency, r.Base), l.Amount(r.Currency, r.Commission))
	}
	for _, d := range s.Days {
		out = append(out, l.Amount(d.Currency, d.Gross), l.Amount(d.Currency, d.Commission))
	}
	for _, a := range s.Adjustments {
		out = append(out, l.Amount(a.Currency, a.Commission))
	}
	return out
}

// checkDocPages checks that pdftoppm renders every page and that each
// says "page n of m" in the locale.
func checkDocPages(t testing.TB, l *locale.Locale, path, flat string) {
	t.Helper()
	n := len(rasterise(t, path, 40))
	for p := 1; p <= n; p++ {
		if w := spaces.Replace(l.T("page", "n", l.Int(int64(p)), "total", l.Int(int64(n)))); !strings.Contains(flat, w) {
			t.Errorf("no %q", w)
		}
	}
	if n < 2 {
		t.Errorf("pdftoppm rendered %d pages, want page 1 and the appendix at least", n)
	}
}

// TestDocumentScripts: names in Greek, Cyrillic, Japanese, Chinese,
// Korean and Hebrew print as written in the heading with the configured
// fonts (Hebrew right to left); a statement that needs no configured font
// embeds none (the same bytes as without fonts); an Arabic name, or a
// Hebrew one without a font that has its letters, falls back to the
// agency id, its address line is left out, and no U+FFFD prints.
func TestDocumentScripts(t *testing.T) {
	cjk := []string{requireFont(t, fontJa, "fonts-ipafont-gothic"), requireFont(t, fontKo, "fonts-nanum"),
		requireFont(t, fontCJK, "fonts-droid-fallback")}
	withDejaVu := append(slices.Clone(cjk), requireFont(t, fontDejaVu, "fonts-dejavu-core"))
	for _, tc := range []struct {
		name, legal, addr, want string
		fonts                   []string
	}{
		{"greek", idGreek, "Οδός Ερμού 1", idGreek, withDejaVu},
		{"cyrillic", idCyrillic, "ул. Ленина, 1", idCyrillic, withDejaVu},
		{"japanese", "東京トラベル", "東京都千代田区丸の内1-1-1", "東京トラベル", cjk},
		{"chinese", "北京国际旅行社", "北京市东城区", "北京国际旅行社", cjk},
		{"korean", "서울여행사", "서울특별시 중구", "서울여행사", cjk},
		{"hebrew", "סוכנות נסיעות", "רחוב הרצל 12, תל אביב", "סוכנות נסיעות", withDejaVu},
		{"hebrew without a font", "סוכנות נסיעות", "רחוב הרצל 1", "agency-0001", cjk},
		{"hebrew points", "שָׁלוֹם", "רְחוֹב", "agency-0001", withDejaVu},
		{"arabic", "وكالة السفر", "شارع النيل", "agency-0001", withDejaVu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := document(t, "en", tc.legal, tc.addr)
			b := renderWith(t, tc.fonts, s)
			text := pdfText(t, writeTemp(t, "s.pdf", b))
			head := strings.Join(strings.Fields(strings.SplitN(text, "Summary", 2)[0]), " ")
			if !strings.Contains(head, tc.want) && !strings.Contains(head, reversed(tc.want)) {
				t.Errorf("page 1's head lacks %q:\n%s", tc.want, head)
			}
			if strings.ContainsRune(text, Replacement) {
				t.Errorf("a replacement character printed")
			}
			// pdftotext puts a mixed right-to-left line back together in
			// its own order: the address is compared word by word.
			for _, w := range strings.Fields(tc.addr) {
				if w = strings.Trim(w, ","); tc.want == tc.legal && !strings.Contains(head, w) && !strings.Contains(head, reversed(w)) {
					t.Errorf("page 1's head lacks %q of the address %q:\n%s", w, tc.addr, head)
				}
			}
			if tc.want != tc.legal && (strings.Contains(text, tc.legal) || strings.Contains(text, tc.addr)) {
				t.Errorf("text that needs shaping printed")
			}
			latin := tc.name == "greek" || tc.name == "cyrillic" || tc.want != tc.legal
			if latin && !bytes.Equal(b, renderWith(t, nil, s)) {
				t.Errorf("a statement that needs no configured font differs from one rendered without fonts")
			}
		})
	}
}

// reversed is s with its runes in reverse order (how a right-to-left
// line may come back from pdftotext).
func reversed(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// TestVisual: a Hebrew line in the order it is drawn left to right.
func TestVisual(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", "abc"},
		{"סוכנות נסיעות", "תועיסנ תונכוס"},
		{"רחוב הרצל 12, תל אביב", "ביבא לת ,12 לצרה בוחר"},
		{"Agence סוכנות 12", "Agence תונכוס 12"},
		{"סוכנות (ים)", "(םי) תונכוס"},
	} {
		if got := visual("x "+tc.in, false); tc.in != "abc" && strings.HasPrefix(got, "x ") == false {
			t.Errorf("visual(%q, false) = %q: a left-to-right line starts at the left", "x "+tc.in, got)
		}
		if got := visual(tc.in, true); got != tc.want {
			t.Errorf("visual(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNewRendererRefuses: a font collection, CFF outlines or a file that
// is not a font is an ErrFont naming the file.
func TestNewRendererRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, head := range map[string]string{"c.ttc": "ttcf", "o.otf": "OTTO", "x.ttf": "nope"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, append([]byte(head), make([]byte, 64)...), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := NewRenderer([]string{p}); !errors.Is(err, ErrFont) || !strings.Contains(err.Error(), p) {
			t.Errorf("NewRenderer(%s) = %v, want ErrFont naming the file", name, err)
		}
	}
	if _, err := NewRenderer([]string{filepath.Join(dir, "missing.ttf")}); err == nil || !strings.Contains(err.Error(), "missing.ttf") {
		t.Errorf("NewRenderer(missing) = %v", err)
	}
}

// TestDocumentLegacyUnchanged: a statement without a Doc renders with
// any Renderer as before version 4 (TestRenderDeterministic pins it).
func TestDocumentLegacyUnchanged(t *testing.T) {
	s := realistic(t, idLatin)
	if !bytes.Equal(render(t, s), renderWith(t, []string{requireFont(t, fontJa, "fonts-ipafont-gothic")}, s)) {
		t.Error("a statement without a Doc renders differently with statements.fonts")
	}
}

// BenchmarkRenderDocument renders the en draft document (30 days, 720
// periods); BenchmarkRenderDocumentJa the ja one with the IPA font.
func BenchmarkRenderDocument(b *testing.B) {
	benchmarkDocument(b, document(b, "en", "Sunrise Travel Ltd", "221B Baker Street", "London NW1 6XE"), nil)
}

// BenchmarkRenderDocumentDay is BenchmarkRenderDay's statement (one day,
// 24 periods) as an en document.
func BenchmarkRenderDocumentDay(b *testing.B) {
	s := document(b, "en", "Sunrise Travel Ltd", "221B Baker Street", "London NW1 6XE")
	s.Days, s.Periods, s.Adjustments = s.Days[:3], s.Periods[:24], nil
	benchmarkDocument(b, s, nil)
}

// BenchmarkRenderDocumentDayJa is BenchmarkRenderDocumentDay for the ja
// agency with the IPA font.
func BenchmarkRenderDocumentDayJa(b *testing.B) {
	s := document(b, "ja", "東京トラベル", "〒100-0005", "東京都千代田区丸の内1-1-1")
	s.Days, s.Periods, s.Adjustments = s.Days[:3], s.Periods[:24], nil
	benchmarkDocument(b, s, []string{requireFont(b, fontJa, "fonts-ipafont-gothic")})
}

func BenchmarkRenderDocumentJa(b *testing.B) {
	benchmarkDocument(b, document(b, "ja", "東京トラベル", "〒100-0005", "東京都千代田区丸の内1-1-1"),
		[]string{requireFont(b, fontJa, "fonts-ipafont-gothic")})
}

func benchmarkDocument(b *testing.B, s *statement.Agency, fonts []string) {
	r, err := NewRenderer(fonts)
	if err != nil {
		b.Fatal(err)
	}
	var size int
	cpu := testenv.ProcessCPU()
	for b.Loop() {
		var buf bytes.Buffer
		if err := r.Render(&buf, s); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes/pdf")
	b.ReportMetric(float64(testenv.ProcessCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// TestDocumentWordingFallsBack: a ja statement rendered without a font
// for Japanese (statements.fonts empty) is worded in English, never in
// boxes; only the name itself, which no font can print, is replaced.
func TestDocumentWordingFallsBack(t *testing.T) {
	s := document(t, "ja", "Sakura Travel KK", "1-9-1 Marunouchi", "Tokyo")
	text := pdfText(t, writeTemp(t, "s.pdf", renderWith(t, nil, s)))
	en := locale.English()
	for _, w := range []string{en.T("doc.title"), en.T("doc.number"), en.Month(s.Month), "Sakura Travel KK"} {
		if !strings.Contains(spaces.Replace(text), w) {
			t.Errorf("pdftotext output lacks %q (English wording)", w)
		}
	}
	if strings.ContainsRune(text, Replacement) {
		t.Errorf("a replacement character in a statement whose names all print:\n%s", text)
	}
}

package pdf

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
)

// TestDocumentEdges renders documents with nothing in them, odd text,
// many currencies, long names and logos: no error, a PDF pdftotext reads
// and pdftoppm renders.
func TestDocumentEdges(t *testing.T) {
	var logo bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 120, 40))
	for x := range 120 {
		for y := range 40 {
			img.Set(x, y, color.RGBA{uint8(x * 2), 90, 160, 255})
		}
	}
	if err := png.Encode(&logo, img); err != nil {
		t.Fatal(err)
	}
	empty := &statement.Agency{Job: "j", AgencyID: "a-1", Month: "2026-02", Status: statement.Draft, Revision: 1,
		Doc: statement.Document{Number: "N-1"}}
	withLogo := document(t, "en", "Sunrise Travel Ltd", "1 Road")
	withLogo.Doc.Logo = logo.Bytes()
	badLogo := document(t, "de", "Reisebüro", "Straße 1")
	badLogo.Doc.Logo = []byte("not a png")
	many := document(t, "fr", "Voyages", "1 rue")
	for _, code := range []string{"CHF", "CLF", "EUR", "GBP", "KWD", "TND", "UYW"} {
		l := many.Lines[0]
		l.Currency = currency(t, code)
		many.Lines = append(many.Lines, l)
	}
	long := document(t, "en", strings.Repeat("Agence de voyages très longue ", 12), strings.Repeat("Rue ", 60))
	long.Doc.PaymentInstructions = strings.Repeat("Pay by bank transfer only. ", 30)
	odd := document(t, "xx-invalid-☃", "a\tb\x1b\xff\u200bc", "e\u0301")
	odd.Doc.Issuer = statement.Party{}
	odd.Doc.Listed = false
	credit := document(t, "es", "Viajes Sol", "Calle 1")
	for i := range credit.Lines {
		credit.Lines[i].CommissionDue = credit.Lines[i].CommissionDue.Neg()
	}
	credit.Lines[0].CommissionDue = money.TotalOf(0)
	oneDay := document(t, "nl", "Reizen BV", "Straat 1")
	oneDay.Days, oneDay.Periods, oneDay.Adjustments = oneDay.Days[:1], oneDay.Periods[:1], nil
	for _, tc := range []struct {
		name string
		s    *statement.Agency
		want []string
	}{
		{"empty", empty, []string{"N-1", "a-1", "0 periods"}},
		{"logo", withLogo, []string{"Sunrise Travel Ltd"}},
		{"not a png logo", badLogo, []string{"Reisebüro"}},
		{"ten currencies", many, []string{"UYW", "KWD"}},
		{"long", long, []string{"très longue", "Pay by bank transfer"}},
		{"odd text and locale", odd, []string{"a b", "é", "not in the directory"}},
		{"credit", credit, []string{"Acme Travel Billing SAS debe 342.960 JPY a Viajes Sol", "No hay ningún importe pendiente en BHD"}},
		{"one day", oneDay, []string{"Reizen BV"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, tc.s); err != nil {
				t.Fatal(err)
			}
			path := writeTemp(t, "s.pdf", buf.Bytes())
			flat := strings.Join(strings.Fields(pdfText(t, path)), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("pdftotext output lacks %q:\n%.2000s", w, flat)
				}
			}
			if len(rasterise(t, path, 30)) < 2 {
				t.Error("fewer than 2 pages")
			}
		})
	}
}

// FuzzRenderDocument: any party name, address line, instructions and
// locale render (no error, no panic) to a complete PDF.
func FuzzRenderDocument(f *testing.F) {
	for _, s := range []string{idLatin, idGreek, idCJK, idEmoji, "", "a\x00b", "\xff\xfe", "סוכנות", "وكالة", "\u202eevil", "(a)\\b)"} {
		f.Add(s, s, "fr")
	}
	f.Fuzz(func(t *testing.T, name, line, tag string) {
		s := document(t, tag, name, line)
		s.Doc.PaymentInstructions = line
		s.Days, s.Periods = s.Days[:2], s.Periods[:2]
		var buf bytes.Buffer
		if err := Render(&buf, s); err != nil {
			t.Fatalf("Render(name %q, line %q, locale %q): %v", name, line, tag, err)
		}
		if b := buf.Bytes(); !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("%%EOF")) {
			t.Fatal("not a complete PDF")
		}
	})
}

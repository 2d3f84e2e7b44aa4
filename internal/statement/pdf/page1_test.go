package pdf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/locale"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
)

// stress is a statement at the limits of page 1: twelve currencies,
// 45 lines (2,000 characters) of payment instructions, a 490-character
// issuer name and 8 address lines on both sides.
func stress(t testing.TB, tag string) *statement.Agency {
	t.Helper()
	var addr []string
	for i := range 8 {
		addr = append(addr, fmt.Sprintf("Address line %d, Building %d, Long Street Name", i+1, i+1))
	}
	s := document(t, tag, "Sunrise Travel Ltd", addr...)
	s.Doc.Issuer.LegalName = strings.Repeat("Acme Travel Billing Company ", 18)[:490]
	s.Doc.Issuer.Address = addr
	var instr strings.Builder
	for i := range 45 {
		line := fmt.Sprintf("Line %d: bank transfer to account %02d.", i+1, i+1)
		instr.WriteString(line + strings.Repeat(".", 43-len(line)) + "\n")
	}
	s.Doc.PaymentInstructions = strings.TrimSuffix(instr.String(), "\n")
	line := s.Lines[0]
	s.Lines = nil
	for _, code := range []string{"AUD", "BHD", "CAD", "CHF", "CLF", "EUR", "GBP", "JPY", "KWD", "NOK", "SEK", "USD"} {
		line.Currency = currency(t, code)
		s.Lines = append(s.Lines, line)
	}
	return s
}

// TestPageOneBreaks: page 1's blocks break onto new pages when they do
// not fit: every amount-due sentence, every instruction line and the
// number to quote are in the text, and nothing is drawn below the body.
func TestPageOneBreaks(t *testing.T) {
	for _, tag := range []string{"en", "fr", "de"} {
		t.Run(tag, func(t *testing.T) {
			s := stress(t, tag)
			var below []string
			drawnBelow = func(page int, y float64, rs []piece) {
				var b strings.Builder
				for _, r := range rs {
					b.WriteString(r.text)
				}
				below = append(below, fmt.Sprintf("page %d y %.1f: %q", page, y, b.String()))
			}
			b := renderWith(t, nil, s)
			drawnBelow = nil
			for _, x := range below {
				t.Errorf("drawn below the body: %s", x)
			}
			l, err := locale.Parse(tag)
			if err != nil {
				t.Fatal(err)
			}
			flat := strings.Join(strings.Fields(spaces.Replace(pdfText(t, writeTemp(t, "s.pdf", b)))), " ")
			doc := s.Doc
			for _, x := range s.Lines {
				w := l.T("doc.owes", "payer", doc.Recipient.LegalName, "payee", strings.TrimSpace(doc.Issuer.LegalName),
					"amount", l.Money(x.Currency, x.CommissionDue), "date", l.Date(doc.DueDate))
				if w = strings.Join(strings.Fields(spaces.Replace(w)), " "); !strings.Contains(flat, w) {
					t.Errorf("no %q", w)
				}
			}
			wants := append(strings.Split(doc.PaymentInstructions, "\n"), spaces.Replace(l.T("doc.quote_reference", "number", doc.Number)))
			// The running header cuts the long issuer name, readable.
			wants = append(wants, "… · "+doc.Number)
			for _, w := range wants {
				if !strings.Contains(flat, w) {
					t.Errorf("no %q", w)
				}
			}
		})
	}
}

// TestPageOneWording: terms of 0 days are due on receipt; a statement
// with nothing to pay prints neither payment instructions nor a number to
// quote; a rate line whose commission is not its rate times its base is
// marked and explained, an unknown rate prints as a dash.
func TestPageOneWording(t *testing.T) {
	en := locale.English()
	s := document(t, "en", "Sunrise Travel Ltd", "1 Road")
	s.Doc.PaymentTermsDays = 0
	s.Doc.DueDate = s.Doc.IssueDate
	s.Rates[0].Commission = money.TotalOf(999999)
	s.Rates[1].BPS = -1
	flat := strings.Join(strings.Fields(pdfText(t, writeTemp(t, "s.pdf", renderWith(t, nil, s)))), " ")
	for _, w := range []string{en.T("doc.terms_immediate"), "* " + en.T("rate.note"), "*" + en.Amount(s.Rates[0].Currency, s.Rates[0].Commission), "—",
		en.T("doc.quote_reference", "number", s.Doc.Number)} {
		if !strings.Contains(flat, w) {
			t.Errorf("no %q", w)
		}
	}
	if strings.Count(flat, "*") != 2 {
		t.Errorf("%d asterisks, want the marked line's and the note's", strings.Count(flat, "*"))
	}
	fine := document(t, "en", "Sunrise Travel Ltd", "1 Road")
	flat = strings.Join(strings.Fields(pdfText(t, writeTemp(t, "s.pdf", renderWith(t, nil, fine)))), " ")
	if strings.Contains(flat, "*") || strings.Contains(flat, en.T("rate.note")) {
		t.Errorf("a note for rate lines that are their rate times their base")
	}
	for i := range s.Lines {
		s.Lines[i].CommissionDue = s.Lines[i].CommissionDue.Neg()
	}
	s.Lines[0].CommissionDue = money.TotalOf(0)
	flat = strings.Join(strings.Fields(pdfText(t, writeTemp(t, "s.pdf", renderWith(t, nil, s)))), " ")
	for _, w := range []string{en.T("doc.payment_instructions"), "AGRIFRPP", "Please quote"} {
		if strings.Contains(flat, w) {
			t.Errorf("nothing to pay, but %q printed", w)
		}
	}
}

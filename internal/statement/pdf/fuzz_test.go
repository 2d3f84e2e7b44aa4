package pdf

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
)

// FuzzRender: any agency id, job and adjustment reason renders (no error,
// no panic) to a complete PDF, and printable leaves only runes the fonts
// draw.
func FuzzRender(f *testing.F) {
	for _, s := range []string{idLatin, idGreek, idCyrillic, idCJK, idEmoji, "", "a\x00b", "\xff\xfe", "e\u0301\u0302\u0303", "\u202eevil", "(a)\\b)"} {
		f.Add(s, "job", "recheck")
	}
	if err := glyphs.load(); err != nil {
		f.Fatal(err)
	}
	usd, err := money.LookupCurrency("USD")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, job, reason string) {
		for _, r := range printable(id) {
			if !glyphs.has(r) {
				t.Fatalf("printable(%q) keeps %U, which the fonts lack", id, r)
			}
		}
		if !utf8.ValidString(printable(id)) {
			t.Fatalf("printable(%q) is not UTF-8", id)
		}
		s := &statement.Agency{Job: job, AgencyID: id, Month: "2026-06", Zone: "UTC", Status: statement.Draft, Revision: 1, ClosesAt: reason,
			Lines: []statement.Line{{Currency: usd, Totals: statement.Totals{PurchaseCount: 1, Gross: money.TotalOf(100)}}},
			Days:  []statement.Day{{Date: "2026-06-02", Currency: usd, Totals: statement.Totals{PurchaseCount: 1, Gross: money.TotalOf(100)}}},
			Adjustments: []statement.Adjustment{{Period: hour(t, "2026-05-01T00:00:00Z"), Month: "2026-05", FromRevision: 1, ToRevision: 2,
				Reason: reason, Currency: usd}},
		}
		var buf bytes.Buffer
		if err := Render(&buf, s); err != nil {
			t.Fatalf("Render(agency %q, job %q, reason %q): %v", id, job, reason, err)
		}
		if b := buf.Bytes(); !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("%%EOF")) {
			t.Fatalf("Render(agency %q): not a complete PDF", id)
		}
	})
}

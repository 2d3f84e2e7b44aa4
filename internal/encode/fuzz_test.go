package encode

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// formulaStart reports whether a spreadsheet would run a cell starting
// like s as a formula (OWASP, CSV injection): = + - @ TAB CR.
func formulaStart(s string) bool {
	return s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0]))
}

// wantCell is what a CSV reader gets back for a text cell holding s:
// neutralised, and without CRs (encoding/csv writes line breaks inside a
// quoted cell as CRLF and drops a lone CR, a reader returns LF).
func wantCell(s string) string {
	if formulaStart(s) {
		s = "'" + s
	}
	return strings.ReplaceAll(s, "\r", "")
}

// FuzzCSVNeutralise writes a line item and a summary row whose text cells
// are arbitrary strings, reads both files back with encoding/csv, and
// checks that every text cell is the string (prefixed with ' when it
// starts like a formula) and that no cell a spreadsheet reads starts like
// a formula, except amounts, which stay numbers: "-5.00" is not text.
func FuzzCSVNeutralise(f *testing.F) {
	for _, s := range []string{
		"acme", "=cmd|' /C calc'!A0", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", " =1", "'=1", "a,b", `a"b`, "a\nb",
		"a\r\nb", "=HYPERLINK(\"http://x\")", "\xff=", "", "é", "\n=1",
	} {
		f.Add(s, s, "cust", "prod", "202405011000", "2024-05-01T10:00:00.1111111111111111", int64(-500), uint8(2))
	}
	f.Fuzz(func(t *testing.T, id, agency, customer, product, pk, sk string, amount int64, digits uint8) {
		c := money.Currency{Code: "USD", Digits: int(digits % 5)}
		at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
		li := report.LineItem{
			Tx: item.Transaction{PK: pk, SK: sk, ID: id, AgencyID: agency, CustomerID: customer, ProductID: product,
				Kind: item.Refund, Currency: c, Amount: amount, RecordedAt: at},
			BPS: 1000, Commission: -amount / 10,
		}
		var b bytes.Buffer
		lw := NewLineItemCSVWriter(&b)
		if err := lw.Write(&li); err != nil {
			t.Fatal(err)
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		row := readOneRow(t, b.Bytes(), lineItemCSVHeader)
		texts := map[string]string{"transaction_id": id, "agency_id": agency, "customer_id": customer,
			"product_id": product, "partition_key": pk, "sort_key": sk, "currency": "USD", "kind": "refund"}
		for col, s := range texts {
			if got := row[col]; got != wantCell(s) {
				t.Fatalf("%s cell = %q, want %q", col, got, wantCell(s))
			}
		}
		for col, s := range row {
			if _, text := texts[col]; text && formulaStart(s) {
				t.Fatalf("%s cell %q starts like a formula", col, s)
			}
		}
		if v, err := money.ParseAmount(row["amount"], c); err != nil || v != amount {
			t.Fatalf("amount cell %q = %d, %v; want %d", row["amount"], v, err, amount)
		}

		b.Reset()
		sum := report.SummaryRow{PeriodStart: at, PeriodEnd: at.Add(time.Hour), AgencyID: agency, Currency: c,
			Gross: money.TotalOf(amount), Net: money.TotalOf(amount)}
		if err := WriteSummaryCSV(&b, []report.SummaryRow{sum}); err != nil {
			t.Fatal(err)
		}
		srow := readOneRow(t, b.Bytes(), summaryCSVHeader)
		if got := srow["agency_id"]; got != wantCell(agency) {
			t.Fatalf("summary agency_id cell = %q, want %q", got, wantCell(agency))
		}
		if v, err := money.ParseTotal(srow["net_amount"], c); err != nil || v != sum.Net {
			t.Fatalf("net_amount cell %q = %s, %v", srow["net_amount"], v, err)
		}
	})
}

// readOneRow reads a CSV file of a header and one row.
func readOneRow(t *testing.T, b []byte, header []string) map[string]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("not valid CSV: %v\n%q", err, b)
	}
	if len(recs) != 2 || strings.Join(recs[0], ",") != strings.Join(header, ",") || len(recs[1]) != len(header) {
		t.Fatalf("want a header and one row of %d cells, got %q", len(header), recs)
	}
	row := map[string]string{}
	for i, v := range recs[1] {
		row[header[i]] = v
	}
	return row
}

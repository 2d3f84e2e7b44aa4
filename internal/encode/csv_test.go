package encode

import (
	"bytes"
	"encoding/csv"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

func summaryCSV(t *testing.T, rows []report.SummaryRow) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSummaryCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func adjustmentsCSV(t *testing.T, rows []report.AdjustmentRow) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteAdjustmentsCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func lineItemsCSV(t *testing.T, rows []report.LineItem) []byte {
	t.Helper()
	var b bytes.Buffer
	lw := NewLineItemCSVWriter(&b)
	for i := range rows {
		if err := lw.Write(&rows[i]); err != nil {
			t.Fatalf("Write row %d: %v", i, err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if lw.Rows() != int64(len(rows)) {
		t.Errorf("Rows() = %d, want %d", lw.Rows(), len(rows))
	}
	return b.Bytes()
}

func TestCSVGolden(t *testing.T) {
	tests := []struct {
		name  string
		write func(*testing.T) []byte
	}{
		{"summary.csv", func(t *testing.T) []byte { return summaryCSV(t, summaryRows()) }},
		{"adjustments.csv", func(t *testing.T) []byte { return adjustmentsCSV(t, adjustmentRows()) }},
		{"transactions.csv", func(t *testing.T) []byte { return lineItemsCSV(t, lineItems()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second := tt.write(t), tt.write(t)
			if !bytes.Equal(first, second) {
				t.Fatal("two writes of the same rows differ")
			}
			golden(t, tt.name, first)
		})
	}
}

// csvTable parses b as RFC 4180 CSV, checks every line ends in CRLF and
// the header, and returns the records after the header as maps.
func csvTable(t *testing.T, b []byte, header []string) []map[string]string {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\r\n")) {
		t.Errorf("file does not end in CRLF: %q", b)
	}
	r := csv.NewReader(bytes.NewReader(b))
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("not valid CSV: %v\n%s", err, b)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(header, ",") {
		t.Fatalf("header = %q, want %q", recs[0], header)
	}
	// Every line ends in CRLF, the line breaks inside quoted cells too
	// (encoding/csv writes them as CRLF; a reader gives back LF).
	if n, crlf := bytes.Count(b, []byte("\n")), bytes.Count(b, []byte("\r\n")); n != crlf {
		t.Errorf("%d line ends, %d of them CRLF", n, crlf)
	}
	out := make([]map[string]string, len(recs)-1)
	for i, rec := range recs[1:] {
		m := make(map[string]string, len(rec))
		for j, v := range rec {
			m[header[j]] = v
		}
		out[i] = m
	}
	return out
}

// TestSummaryCSVCells: amounts exact in each currency's own digits,
// negative numbers untouched, formula-like agency ids neutralised,
// timestamps RFC 3339 UTC.
func TestSummaryCSVCells(t *testing.T) {
	rows := summaryRows()
	// A period start given in another zone is still written in UTC.
	rows[0].PeriodStart = rows[0].PeriodStart.In(time.FixedZone("CEST", 2*3600))
	recs := csvTable(t, summaryCSV(t, rows), summaryCSVHeader)
	if len(recs) != len(rows) {
		t.Fatalf("%d records, want %d", len(recs), len(rows))
	}
	tests := []struct {
		row          int
		column, want string
	}{
		{0, "period_start", "2024-05-01T10:00:00Z"},
		{0, "period_end", "2024-05-01T11:00:00Z"},
		{0, "agency_id", "'-2+3"},
		{0, "net_amount", "-5.00"}, // a negative number is left alone
		{0, "commission_amount", "-0.50"},
		{0, "refund_count", "1"},
		{1, "agency_id", `'=HYPERLINK("http://x","y")`},
		{1, "gross_amount", "99999999999999.99"},
		{2, "currency", "BHD"},
		{2, "gross_amount", "1.500"}, // BHD: 3 digits
		{2, "net_amount", "-0.500"},
		{2, "commission_amount", "-0.050"},
		{3, "gross_amount", "1.2345"}, // CLF: 4 digits
		{3, "refund_amount", "0.0000"},
		{4, "gross_amount", "1500"}, // JPY: none
		{4, "refund_amount", "0"},
		{5, "refund_amount", "19.99"},
		{5, "purchase_count", "3"},
		{6, "gross_amount", bigAmount},
		{6, "refund_amount", bigRefunds},
		{6, "net_amount", bigNet},
		{6, "commission_amount", bigCommission},
		{6, "purchase_count", "1000000"},
	}
	for _, tt := range tests {
		if got := recs[tt.row][tt.column]; got != tt.want {
			t.Errorf("row %d %s = %q, want %q", tt.row, tt.column, got, tt.want)
		}
	}
}

func TestAdjustmentsCSVCells(t *testing.T) {
	recs := csvTable(t, adjustmentsCSV(t, adjustmentRows()), adjustmentsCSVHeader)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	compareMaps(t, "row 0", recs[0], map[string]string{
		"period_start": "2024-05-01T10:00:00Z", "period_end": "2024-05-01T11:00:00Z",
		"agency_id": "'+agency", "currency": "JPY", "purchase_count": "-1", "refund_count": "0",
		"gross_amount": "-1500", "refund_amount": "0", "net_amount": "-1500", "commission_amount": "-150",
		"revision": "3",
	})
	if got := recs[2]["refund_count"]; got != "-1" {
		t.Errorf("row 2 refund_count = %q, want -1", got)
	}
	if got := recs[3]["gross_amount"]; got != bigAmount {
		t.Errorf("row 3 gross_amount = %q, want %s", got, bigAmount)
	}
}

// TestLineItemCSVCells: every text cell a spreadsheet would run is
// neutralised (ids, keys), quoting survives commas, quotes and line
// breaks, and amounts keep the currency's digits.
func TestLineItemCSVCells(t *testing.T) {
	rows := lineItems()
	recs := csvTable(t, lineItemsCSV(t, rows), lineItemCSVHeader)
	if len(recs) != len(rows) {
		t.Fatalf("%d records, want %d", len(recs), len(rows))
	}
	compareMaps(t, "row 0", recs[0], map[string]string{
		"transaction_id": "'=1+1", "agency_id": "'+agency", "customer_id": "'@cust", "product_id": "'-prod",
		"kind": "purchase", "currency": "JPY", "amount": "1500", "commission_amount": "150", "commission_bps": "1000",
		"recorded_at": "2024-05-01T10:00:01Z", "partition_key": "202405011000",
		"sort_key": "2024-05-01T10:00:01.AAAAAAAAAAAAAAAA",
	})
	tests := []struct {
		row          int
		column, want string
	}{
		{1, "kind", "refund"},
		{1, "customer_id", ""}, // absent: an empty cell
		{1, "product_id", ""},
		{1, "commission_amount", "-150"},
		{1, "recorded_at", "2024-05-01T10:00:02.345Z"},
		{2, "amount", "1.500"},
		{2, "commission_amount", "0.188"}, // 0.1875 half to even
		{3, "amount", "1.2345"},
		{3, "commission_amount", "0.1234"}, // 0.12345 half to even
		{4, "amount", "19.99"},
		{4, "commission_amount", "2.40"},
		{5, "customer_id", "a,b"},
		{5, "product_id", `say "hi"`},
		{5, "commission_amount", "-0.60"},
		{6, "customer_id", "line\nbreak"},
		{6, "product_id", "'\tprod"},
		{6, "amount", "999999999999.99"},
		{7, "agency_id", "b"},
		{7, "partition_key", "'=cmd|' /C calc'!A0"},
		{7, "commission_amount", "0.02"}, // 0.025 half to even
	}
	for _, tt := range tests {
		if got := recs[tt.row][tt.column]; got != tt.want {
			t.Errorf("row %d %s = %q, want %q", tt.row, tt.column, got, tt.want)
		}
	}
}

// TestLineItemCSVNeutralisesEveryTextColumn puts a formula in each text
// column in turn.
func TestLineItemCSVNeutralisesEveryTextColumn(t *testing.T) {
	const formula = "=SUM(A1:A9)"
	for _, col := range []string{"transaction_id", "agency_id", "customer_id", "product_id", "partition_key", "sort_key"} {
		li := lineItems()[4]
		tx := &li.Tx
		switch col {
		case "transaction_id":
			tx.ID = formula
		case "agency_id":
			tx.AgencyID = formula
		case "customer_id":
			tx.CustomerID = formula
		case "product_id":
			tx.ProductID = formula
		case "partition_key":
			tx.PK = formula
		case "sort_key":
			tx.SK = formula
		}
		recs := csvTable(t, lineItemsCSV(t, []report.LineItem{li}), lineItemCSVHeader)
		if got := recs[0][col]; got != "'"+formula {
			t.Errorf("%s = %q, want %q", col, got, "'"+formula)
		}
	}
	// The currency column is neutralised too (a code is validated to
	// three letters upstream; this is the last line of defence).
	rows := summaryRows()[:1]
	rows[0].Currency = money.Currency{Code: "=1", Digits: 2}
	recs := csvTable(t, summaryCSV(t, rows), summaryCSVHeader)
	if got := recs[0]["currency"]; got != "'=1" {
		t.Errorf("currency = %q, want '=1", got)
	}
}

func TestCSVText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"agency-1", "agency-1"},
		{"USD", "USD"},
		{"=1+1", "'=1+1"},
		{"+1", "'+1"},
		{"-1", "'-1"},
		{"-5.00", "'-5.00"}, // text, not an amount: amounts never pass here
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"a=b", "a=b"},
		{" =1", " =1"},
		{"'quoted", "'quoted"},
		{"élan", "élan"},
	}
	for _, tt := range tests {
		if got := csvText(tt.in); got != tt.want {
			t.Errorf("csvText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCSVAmountDigits: amounts are exact in the currency's own digits,
// whatever their size or sign.
func TestCSVAmountDigits(t *testing.T) {
	tests := []struct {
		cur   money.Currency
		minor int64
		want  string
	}{
		{usd, 1999, "19.99"},
		{usd, -5, "-0.05"},
		{usd, -500, "-5.00"},
		{jpy, 1500, "1500"},
		{jpy, -1, "-1"},
		{bhd, 1500, "1.500"},
		{bhd, 1, "0.001"},
		{clf, 12345, "1.2345"},
		{clf, -1, "-0.0001"},
	}
	for _, tt := range tests {
		li := lineItems()[4]
		li.Tx.Currency, li.Tx.Amount, li.Commission = tt.cur, tt.minor, tt.minor
		recs := csvTable(t, lineItemsCSV(t, []report.LineItem{li}), lineItemCSVHeader)
		if got := recs[0]["amount"]; got != tt.want {
			t.Errorf("%s %d: amount = %q, want %q", tt.cur.Code, tt.minor, got, tt.want)
		}
		if got := recs[0]["commission_amount"]; got != tt.want {
			t.Errorf("%s %d: commission_amount = %q, want %q", tt.cur.Code, tt.minor, got, tt.want)
		}

		row := summaryRows()[0]
		row.Currency, row.Net = tt.cur, money.TotalOf(tt.minor)
		srecs := csvTable(t, summaryCSV(t, []report.SummaryRow{row}), summaryCSVHeader)
		if got := srecs[0]["net_amount"]; got != tt.want {
			t.Errorf("%s %d: summary net_amount = %q, want %q", tt.cur.Code, tt.minor, got, tt.want)
		}
	}
}

// TestCSVEmpty: no rows is a header alone.
func TestCSVEmpty(t *testing.T) {
	want := strings.Join(summaryCSVHeader, ",") + "\r\n"
	if got := string(summaryCSV(t, nil)); got != want {
		t.Errorf("empty summary = %q, want %q", got, want)
	}
	want = strings.Join(lineItemCSVHeader, ",") + "\r\n"
	if got := string(lineItemsCSV(t, nil)); got != want {
		t.Errorf("empty transactions = %q, want %q", got, want)
	}
}

func TestCSVWriteError(t *testing.T) {
	if err := WriteSummaryCSV(failingWriter{}, summaryRows()); !errors.Is(err, errDiskFull) {
		t.Errorf("summary: err = %v, want %v", err, errDiskFull)
	}
	if err := WriteAdjustmentsCSV(failingWriter{}, adjustmentRows()); !errors.Is(err, errDiskFull) {
		t.Errorf("adjustments: err = %v, want %v", err, errDiskFull)
	}
	lw := NewLineItemCSVWriter(failingWriter{})
	rows := lineItems()
	for i := range rows {
		if err := lw.Write(&rows[i]); err != nil {
			t.Fatalf("Write %d: %v (buffered until Close)", i, err)
		}
	}
	err := lw.Close()
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Close err = %v, want %v", err, errDiskFull)
	}
	if err2 := lw.Write(&rows[0]); err2 != err {
		t.Errorf("Write after a failed Close = %v, want the sticky %v", err2, err)
	}
}

// allocatedPerRun is the bytes f allocates, averaged over runs.
func allocatedPerRun(runs int, f func()) uint64 {
	f() // pools filled
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestSmallCSVAllocations: an agency's small CSV files (a summary row, a
// line item) allocate no buffer of 4 KB (csv.NewWriter's own) or 16 KB (a
// full line-item buffer) each: a period of 100,000 agencies made 1.9 GB of
// garbage that way.
func TestSmallCSVAllocations(t *testing.T) {
	rows, items := summaryRows()[:1], lineItems()[:1]
	var b bytes.Buffer
	b.Grow(64 << 10)
	summary := allocatedPerRun(200, func() {
		b.Reset()
		if err := WriteSummaryCSV(&b, rows); err != nil {
			t.Fatal(err)
		}
	})
	lines := allocatedPerRun(200, func() {
		b.Reset()
		lw := NewLineItemCSVWriter(&b)
		if err := lw.Write(&items[0]); err != nil {
			t.Fatal(err)
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if summary >= 2048 || lines >= 2048 {
		t.Fatalf("bytes allocated per file: summary CSV %d, line-item CSV %d; want each under 2048", summary, lines)
	}
}

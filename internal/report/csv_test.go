package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// updateGolden rewrites the golden files in testdata/ (go test -update).
// Other tests of package report should use it too: a second flag named
// "update" in the same test binary panics.
var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

var (
	encUSD = money.Currency{Code: "USD", Digits: 2}
	encJPY = money.Currency{Code: "JPY", Digits: 0}
	encBHD = money.Currency{Code: "BHD", Digits: 3}
)

// encSummaryRows are summary rows covering the three currency scales, a
// negative net and commission, the largest USD amount DECIMAL(18,4)
// holds, and agency ids a spreadsheet would run as formulas.
func encSummaryRows() []SummaryRow {
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	return []SummaryRow{
		{PeriodStart: start, PeriodEnd: end, AgencyID: "agency-1", Currency: encBHD,
			PurchaseCount: 1, RefundCount: 1, Gross: 1500, Refunds: 2000, Net: -500, Commission: -50},
		{PeriodStart: start, PeriodEnd: end, AgencyID: "agency-1", Currency: encJPY,
			PurchaseCount: 2, Gross: 1500, Net: 1500, Commission: 150},
		{PeriodStart: start, PeriodEnd: end, AgencyID: "agency-1", Currency: encUSD,
			PurchaseCount: 3, RefundCount: 1, Gross: 5997, Refunds: 1999, Net: 3998, Commission: 400},
		{PeriodStart: start, PeriodEnd: end, AgencyID: "=HYPERLINK(\"http://x\",\"y\")", Currency: encUSD,
			PurchaseCount: 1, Gross: 9_999_999_999_999_999, Net: 9_999_999_999_999_999, Commission: 5},
		{PeriodStart: start, PeriodEnd: end, AgencyID: "-2+3", Currency: encUSD,
			RefundCount: 1, Refunds: 500, Net: -500, Commission: -50},
	}
}

// encGolden compares got with testdata/name, or rewrites it under -update.
func encGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	if filepath.Ext(name) == ".csv" {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\ngot:\n%q\nwant:\n%q", name, got, want)
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s differs from the golden file at byte %d (got %d bytes, want %d); go test -update rewrites it",
		name, i, len(got), len(want))
}

func TestWriteSummaryCSVGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummaryCSV(&b, encSummaryRows()); err != nil {
		t.Fatal(err)
	}
	encGolden(t, "summary.csv", b.Bytes())
}

func TestWriteSummaryCSVCells(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummaryCSV(&b, encSummaryRows()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("summary.csv is not valid CSV: %v", err)
	}
	if len(recs) != 6 {
		t.Fatalf("got %d records, want header + 5", len(recs))
	}
	if got := recs[0]; len(got) != 10 || got[0] != "period_start" || got[9] != "commission_amount" {
		t.Errorf("header = %q", got)
	}
	col := func(name string) int {
		for i, h := range recs[0] {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	tests := []struct {
		row    int
		column string
		want   string
	}{
		{1, "period_start", "2024-05-01T10:00:00Z"},
		{1, "period_end", "2024-05-01T11:00:00Z"},
		{1, "gross_amount", "1.500"},
		{1, "net_amount", "-0.500"}, // a negative number is left alone
		{1, "commission_amount", "-0.050"},
		{2, "gross_amount", "1500"}, // JPY has no minor digits
		{3, "refund_amount", "19.99"},
		{3, "purchase_count", "3"},
		{4, "agency_id", `'=HYPERLINK("http://x","y")`},
		{4, "gross_amount", "99999999999999.99"},
		{5, "agency_id", "'-2+3"}, // text that looks like a formula is neutralised
		{5, "net_amount", "-5.00"},
	}
	for _, tt := range tests {
		if got := recs[tt.row][col(tt.column)]; got != tt.want {
			t.Errorf("row %d %s = %q, want %q", tt.row, tt.column, got, tt.want)
		}
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
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"a=b", "a=b"},
		{"'quoted", "'quoted"},
	}
	for _, tt := range tests {
		if got := csvText(tt.in); got != tt.want {
			t.Errorf("csvText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

type encFailingWriter struct{}

var errEncWriteFailed = errors.New("disk full")

func (encFailingWriter) Write([]byte) (int, error) { return 0, errEncWriteFailed }

func TestWriteSummaryCSVWriteError(t *testing.T) {
	err := WriteSummaryCSV(encFailingWriter{}, encSummaryRows())
	if !errors.Is(err, errEncWriteFailed) {
		t.Fatalf("err = %v, want %v", err, errEncWriteFailed)
	}
}

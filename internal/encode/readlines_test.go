package encode

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// TestReadLineItemsBack: what the line item writers write, the readers
// give back exactly (CSV: the formula quote removed), and the Parquet
// reader selects by agency and by id.
func TestReadLineItemsBack(t *testing.T) {
	bhd := money.Currency{Code: "BHD", Digits: 3}
	jpy := money.Currency{Code: "JPY", Digits: 0}
	at := time.Date(2026, 3, 1, 10, 5, 12, 250_000_000, time.UTC)
	mk := func(id, agency, customer string, kind item.Kind, c money.Currency, amount, comm int64) report.LineItem {
		return report.LineItem{Tx: item.Transaction{PK: "202603011000", SK: "2026-03-01T10:05:12." + id, ID: id, AgencyID: agency,
			CustomerID: customer, Kind: kind, Currency: c, Amount: amount, RecordedAt: at}, BPS: 1250, Commission: comm}
	}
	rows := []report.LineItem{
		mk("=t1", "a", "=HYPERLINK(\"x\")", item.Purchase, bhd, 1500, 188),
		mk("t2", "a", "", item.Refund, jpy, 1500, -188),
		mk("t3", "b", "c-1", item.Purchase, jpy, 7, 1),
	}
	var csvBuf, pqBuf bytes.Buffer
	cw, pw := NewLineItemCSVWriter(&csvBuf), NewLineItemWriter(&pqBuf, report.LatestParquetLayout)
	for i := range rows[:2] {
		if err := cw.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rows {
		if err := pw.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLineItemsCSV(bytes.NewReader(csvBuf.Bytes()), "a")
	if err != nil || !reflect.DeepEqual(got, rows[:2]) {
		t.Fatalf("csv: %+v, %v\nwant %+v", got, err, rows[:2])
	}
	if _, err := ReadLineItemsCSV(bytes.NewReader(csvBuf.Bytes()), "b"); err == nil {
		t.Fatal("agency a's file read as agency b's")
	}
	for _, tc := range []struct {
		f    LineFilter
		want []report.LineItem
	}{
		{LineFilter{}, rows},
		{LineFilter{Agency: "a"}, rows[:2]},
		{LineFilter{Agency: "b"}, rows[2:]},
		{LineFilter{Agency: "zz"}, nil},
		{LineFilter{ID: "t2"}, rows[1:2]},
	} {
		got, err := ReadLineItemsParquet(bytes.NewReader(pqBuf.Bytes()), int64(pqBuf.Len()), tc.f)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parquet %+v: %+v, %v; want %+v", tc.f, got, err, tc.want)
		}
	}
}

package encode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/report"
)

// TestSmallPageSameBytes: a file written with small page buffers
// (smallpage.go) has the bytes it has with its format's page size, for
// files on both sides of the bound: few and many rows, short and long
// text.
func TestSmallPageSameBytes(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 20, 40, 200} {
		for _, idLen := range []int{1, 12, 100, 1000, 5000} {
			rows := make([]report.SummaryRow, n)
			for i := range rows {
				rows[i] = sumRow(fmt.Sprintf("%0*d", idLen, i), usd, int64(i), 1, fmt.Sprintf("%d.00", i), "1.00", fmt.Sprintf("%d.00", i-1), "0.10")
			}
			recs := make([]summaryRecord, n)
			for i := range rows {
				recs[i], _ = toSummaryRecord(&rows[i])
			}
			var want, got bytes.Buffer
			if err := writeAll(&want, "summary", recs, parquetOptions()); err != nil {
				t.Fatal(err)
			}
			if err := WriteSummaryParquet(&got, rows); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want.Bytes(), got.Bytes()) {
				t.Errorf("summary of %d rows, ids of %d bytes: %d bytes with small pages, %d without (different)", n, idLen, got.Len(), want.Len())
			}
		}
	}
	for _, l := range []report.ParquetLayout{report.ParquetLayout1, report.ParquetLayout2} {
		for _, n := range []int{0, 1, 3, 10, 100, lineItemBatch - 1, lineItemBatch, lineItemBatch + 1, 1500} {
			for _, pad := range []int{0, 50, 2000} {
				want := agencyFile(t, l, n, pad, true)
				got := agencyFile(t, l, n, pad, false)
				if !bytes.Equal(want, got) {
					t.Errorf("layout %d, %d line items padded by %d: %d bytes with small pages, %d without (different)", l, n, pad, len(got), len(want))
				}
			}
		}
	}
}

// agencyFile writes n synthetic line items, their ids padded by pad
// bytes, as an agency's transactions file in layout l; withDefault: with
// the layout's page size whatever the size of the file.
func agencyFile(t *testing.T, l report.ParquetLayout, n, pad int, withDefault bool) []byte {
	t.Helper()
	var b bytes.Buffer
	lw := NewLineItemWriter(&b, l)
	if withDefault {
		opts, err := lineItemOptions(l, false)
		if err != nil {
			t.Fatal(err)
		}
		lw.pw = parquet.NewGenericWriter[lineItemRecord](&b, opts...)
	}
	for i := range n {
		li := genLineItem(i, n)
		li.Tx.ID += strings.Repeat("x", pad)
		if err := lw.Write(&li); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

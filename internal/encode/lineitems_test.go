package encode

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/report"
)

// writeLineItems writes rows with a LineItemWriter of an agency's file in
// the latest layout and returns the file.
func writeLineItems(t testing.TB, rows []report.LineItem) []byte {
	t.Helper()
	return writeLineItemsLayout(t, report.LatestParquetLayout, false, rows)
}

// writeLineItemsLayout writes rows as a transactions file of layout l, the
// period's (dataset) or an agency's, and returns the file.
func writeLineItemsLayout(t testing.TB, l report.ParquetLayout, dataset bool, rows []report.LineItem) []byte {
	t.Helper()
	var b bytes.Buffer
	lw := newLineItemWriter(&b, l, dataset)
	for i := range rows {
		if err := lw.Write(&rows[i]); err != nil {
			t.Fatalf("Write row %d: %v", i, err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if lw.Rows() != int64(len(rows)) {
		t.Errorf("Rows() = %d, want %d", lw.Rows(), len(rows))
	}
	return b.Bytes()
}

// genLineItems returns the n rows of genLineItem.
func genLineItems(n int) []report.LineItem {
	rows := make([]report.LineItem, n)
	for i := range rows {
		rows[i] = genLineItem(i, n)
	}
	return rows
}

func TestLineItemParquetReadBack(t *testing.T) {
	rows := lineItems()
	b := writeLineItems(t, rows)
	got, err := parquet.Read[lineItemRecord](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	// Row 2: 1.500 BHD at 1250 bps, DECIMAL(18,4) unscaled: 15000 and
	// 0.188 (0.1875 half to even) = 1880.
	want2 := lineItemRecord{
		TransactionID: "tx-3", AgencyID: "agency-1",
		Kind: "purchase", Currency: "BHD", Amount: 15000, Commission: 1880, BPS: 1250,
		RecordedAt:   testPeriod.Start.Add(10 * time.Minute),
		PartitionKey: "202405011000", SortKey: "2024-05-01T10:10:00.BBBBBBBBBBBBBBBB",
	}
	g := got[2]
	g.RecordedAt = g.RecordedAt.UTC()
	if g.CustomerID == nil || *g.CustomerID != "cust-1" || g.ProductID == nil || *g.ProductID != "prod-1" {
		t.Errorf("row 2 customer_id, product_id = %v, %v; want cust-1, prod-1", g.CustomerID, g.ProductID)
	}
	g.CustomerID, g.ProductID = nil, nil
	if g != want2 {
		t.Errorf("row 2 = %+v\nwant %+v", g, want2)
	}
	for i, want := range []struct {
		amount, commission int64
	}{
		{15_000_000, 1_500_000}, {15_000_000, -1_500_000}, {15000, 1880}, {12345, 1234},
		{199_900, 24_000}, {50_000, -6_000}, {9_999_999_999_999_900, 9_999_999_999_999_900}, {2500, 200},
	} {
		if got[i].Amount != want.amount || got[i].Commission != want.commission {
			t.Errorf("row %d amount, commission = %d, %d; want %d, %d (unscaled)",
				i, got[i].Amount, got[i].Commission, want.amount, want.commission)
		}
	}

	// An absent customer_id / product_id is NULL, not "".
	f := openParquet(t, b)
	prs := make([]parquet.Row, len(rows))
	rr := f.RowGroups()[0].Rows()
	defer rr.Close()
	if k, err := rr.ReadRows(prs); k != len(rows) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadRows = %d, %v", k, err)
	}
	for i, r := range prs {
		if isNull := r[2].IsNull(); isNull != (rows[i].Tx.CustomerID == "") {
			t.Errorf("row %d customer_id null = %v", i, isNull)
		}
		if isNull := r[3].IsNull(); isNull != (rows[i].Tx.ProductID == "") {
			t.Errorf("row %d product_id null = %v", i, isNull)
		}
	}
}

func TestLineItemWriterRowGroups(t *testing.T) {
	const n = 2*lineItemRowGroupRows + 1000
	b := writeLineItems(t, genLineItems(n))
	f := openParquet(t, b)
	if f.NumRows() != n {
		t.Errorf("file rows %d, want %d", f.NumRows(), n)
	}
	var sizes []int64
	for _, rg := range f.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	if want := []int64{lineItemRowGroupRows, lineItemRowGroupRows, 1000}; !slices.Equal(sizes, want) {
		t.Errorf("row group sizes %v, want %v", sizes, want)
	}
}

// TestLineItemWriterOrder: rows must come sorted by (agency, currency,
// sort key), across agencies too; an equal key is allowed.
func TestLineItemWriterOrder(t *testing.T) {
	rows := lineItems()
	tests := []struct {
		name    string
		order   []int // indexes into rows; the last one is refused when bad
		bad     bool
		naming  string
		wantErr []string
	}{
		{name: "sorted", order: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "equal key", order: []int{0, 1, 1, 2}},
		{name: "sort key back", order: []int{4, 5, 4}, bad: true, wantErr: []string{`"tx-5"`, `"agency-1" USD`}},
		{name: "currency back", order: []int{3, 2}, bad: true, wantErr: []string{`"tx-3"`, "BHD", "CLF"}},
		{name: "agency back", order: []int{7, 6}, bad: true, wantErr: []string{`"tx-7"`, `"agency-1"`, `"b"`}},
		{name: "agency back, later currency", order: []int{2, 1}, bad: true, wantErr: []string{`"tx-2"`, `"+agency"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lw := NewLineItemWriter(io.Discard, report.LatestParquetLayout)
			var err error
			for k, i := range tt.order {
				if err = lw.Write(&rows[i]); err != nil && (!tt.bad || k != len(tt.order)-1) {
					t.Fatalf("row %d (index %d): %v", k, i, err)
				}
			}
			if !tt.bad {
				if err := lw.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("out-of-order row accepted")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
			if err2 := lw.Close(); err2 != err {
				t.Errorf("Close after error = %v, want the sticky %v", err2, err)
			}
		})
	}
}

func TestLineItemWriterUseAfterClose(t *testing.T) {
	lw := NewLineItemWriter(io.Discard, report.LatestParquetLayout)
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	rows := lineItems()
	if err := lw.Write(&rows[0]); err == nil {
		t.Error("Write after Close: no error")
	}
	if err := lw.Close(); err == nil {
		t.Error("second Close: no error")
	}
}

// BenchmarkLineItemWriter writes 1,000,000 line items per iteration as
// a period's transactions file in each layout and reports rows/s, the
// file's bytes, and the largest live heap (after a GC, on an untimed pass
// of its own) seen as each row group fills.
func BenchmarkLineItemWriter(b *testing.B) {
	for _, l := range allLayouts {
		b.Run(fmt.Sprintf("layout=%d", l), func(b *testing.B) { benchLineItemWriter(b, l) })
	}
}

func benchLineItemWriter(b *testing.B, l report.ParquetLayout) {
	const n = 1_000_000
	write := func(check func(i int)) int64 {
		cw := &countingWriter{}
		lw := newLineItemWriter(cw, l, true)
		for i := range n {
			li := genLineItem(i, n)
			if err := lw.Write(&li); err != nil {
				b.Fatal(err)
			}
			check(i)
		}
		if err := lw.Close(); err != nil {
			b.Fatal(err)
		}
		return cw.n
	}
	// The live heap, on a pass of its own: the row groups' encoders go on
	// while the timer is stopped.
	var peak uint64
	var ms runtime.MemStats
	write(func(i int) {
		if i%lineItemRowGroupRows == lineItemRowGroupRows-1 {
			runtime.GC() // live heap, not garbage awaiting collection
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	})
	var size int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		size = write(func(int) {})
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size), "file-bytes")
	b.ReportMetric(float64(peak)/(1<<20), "live-heap-MiB")
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// BenchmarkAgencyLineItemWriter writes an agency's transactions file of
// 10 rows per iteration in each layout: the cost a period pays per agency
// (a writer's setup, its footer), apart from the rows.
func BenchmarkAgencyLineItemWriter(b *testing.B) {
	rows := genLineItems(10)
	for _, l := range allLayouts {
		b.Run(fmt.Sprintf("layout=%d", l), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lw := NewLineItemWriter(io.Discard, l)
				for i := range rows {
					if err := lw.Write(&rows[i]); err != nil {
						b.Fatal(err)
					}
				}
				if err := lw.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

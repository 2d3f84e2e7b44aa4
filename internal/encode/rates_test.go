package encode

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// TestReadLineItemRates: the transaction ids and rates of a transactions
// file come back in file order, over several row groups and pages; an
// empty file has none; a file of another layout is an error.
func TestReadLineItemRates(t *testing.T) {
	for _, n := range []int{0, 3, 2*lineItemRowGroupRows + 17} {
		var b bytes.Buffer
		lw := NewLineItemWriter(&b, report.LatestParquetLayout)
		want := make([]string, n)
		for i := range n {
			li := genLineItem(i, n)
			if err := lw.Write(&li); err != nil {
				t.Fatal(err)
			}
			want[i] = li.Tx.ID + "=" + strconv.Itoa(int(li.BPS))
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		var got []string
		err := ReadLineItemRates(bytes.NewReader(b.Bytes()), int64(b.Len()), func(id []byte, bps int32) error {
			got = append(got, string(id)+"="+strconv.Itoa(int(bps)))
			return nil
		})
		if err != nil {
			t.Fatalf("%d rows: %v", n, err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%d rows: got %d rates, want %d (first %q)", n, len(got), len(want), got[:min(len(got), 3)])
		}
	}

	var b bytes.Buffer
	if err := WriteSummaryParquet(&b, summaryRows()); err != nil {
		t.Fatal(err)
	}
	err := ReadLineItemRates(bytes.NewReader(b.Bytes()), int64(b.Len()), func([]byte, int32) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "not a transactions file") {
		t.Errorf("summary file read as transactions: %v", err)
	}
}

// BenchmarkReadLineItemRates reads the ids and rates of a 1,000,000-row
// transactions file; reports rows/s.
func BenchmarkReadLineItemRates(b *testing.B) {
	const n = 1_000_000
	var buf bytes.Buffer
	lw := NewLineItemWriter(&buf, report.LatestParquetLayout)
	for i := range n {
		li := genLineItem(i, n)
		if err := lw.Write(&li); err != nil {
			b.Fatal(err)
		}
	}
	if err := lw.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rows := 0
		err := ReadLineItemRates(bytes.NewReader(buf.Bytes()), int64(buf.Len()), func([]byte, int32) error { rows++; return nil })
		if err != nil || rows != n {
			b.Fatal(rows, err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

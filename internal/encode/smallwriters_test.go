package encode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// smallFileCases are the line items of a run of small files, one after
// the other: sizes, dictionaries, NULLs and text lengths differing from
// one file to the next.
func smallFileCases() [][]report.LineItem {
	var files [][]report.LineItem
	for k, n := range []int{1, 0, 3, 7, 1, 20, 2, 60, 5, 1, 12, 4} {
		f := make([]report.LineItem, n)
		for i := range f {
			f[i] = genLineItem(i+k, n+k)
			switch k % 3 {
			case 1:
				f[i].Tx.CustomerID, f[i].Tx.ProductID = "", ""
			case 2:
				f[i].Tx.CustomerID = "c" + strings.Repeat("y", k*7)
			}
			f[i].Tx.AgencyID = fmt.Sprintf("a%d-", k) + f[i].Tx.AgencyID
		}
		files = append(files, f)
	}
	return files
}

// TestSmallWritersSameBytes: a small file written by a reused writer
// (smallWriters) has the bytes it has with a new writer of its format's
// page size, whatever the files the writer wrote before; through the
// pools too.
func TestSmallWritersSameBytes(t *testing.T) {
	for _, l := range []report.ParquetLayout{report.ParquetLayout1, report.ParquetLayout2} {
		opts, err := lineItemOptions(l, false)
		if err != nil {
			t.Fatal(err)
		}
		ws := newSmallWriters[lineItemRecord](opts)
		reused := parquet.NewGenericWriter[lineItemRecord](nil, ws.smallOpts...)
		for pass := range 2 {
			for k, f := range smallFileCases() {
				recs := make([]lineItemRecord, len(f))
				for i := range f {
					recs[i], _ = toLineItemRecord(&f[i])
				}
				var want, got, pooled bytes.Buffer
				if err := writeAll(&want, "transactions", recs, opts); err != nil {
					t.Fatal(err)
				}
				resetWriter(reused, &got)
				if err := writeWith(reused, "transactions", recs); err != nil {
					t.Fatal(err)
				}
				lw := NewLineItemWriter(&pooled, l)
				for i := range f {
					if err := lw.Write(&f[i]); err != nil {
						t.Fatal(err)
					}
				}
				if err := lw.Close(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) || !bytes.Equal(pooled.Bytes(), want.Bytes()) {
					t.Errorf("layout %d pass %d file %d (%d rows): %d bytes reused, %d pooled, %d new (different)",
						l, pass, k, len(f), got.Len(), pooled.Len(), want.Len())
				}
			}
		}
	}
	reused := parquet.NewGenericWriter[summaryRecord](nil, summaryWriters.smallOpts...)
	for pass := range 2 {
		for k, n := range []int{1, 0, 4, 1, 9, 2} {
			rows := make([]report.SummaryRow, n)
			recs := make([]summaryRecord, n)
			for i := range rows {
				rows[i] = sumRow(fmt.Sprintf("agency-%d-%s", k, strings.Repeat("z", k*i)), []money.Currency{usd, jpy, bhd}[(i+k)%3],
					int64(i+k), int64(k), fmt.Sprint(i*k), "1", fmt.Sprint(i*k-1), "0")
				recs[i], _ = toSummaryRecord(&rows[i])
			}
			var want, got, pooled bytes.Buffer
			if err := writeAll(&want, "summary", recs, parquetOptions()); err != nil {
				t.Fatal(err)
			}
			resetWriter(reused, &got)
			if err := writeWith(reused, "summary", recs); err != nil {
				t.Fatal(err)
			}
			if err := WriteSummaryParquet(&pooled, rows); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) || !bytes.Equal(pooled.Bytes(), want.Bytes()) {
				t.Errorf("summary pass %d file %d (%d rows): %d bytes reused, %d pooled, %d new (different)",
					pass, k, n, got.Len(), pooled.Len(), want.Len())
			}
		}
	}
}

// TestSmallWritersConcurrent: files written at the same time by several
// goroutines, through the pools, have the bytes of new writers (run with
// -race).
func TestSmallWritersConcurrent(t *testing.T) {
	l := report.LatestParquetLayout
	opts, err := lineItemOptions(l, false)
	if err != nil {
		t.Fatal(err)
	}
	files := smallFileCases()
	want := make([][]byte, len(files))
	for k, f := range files {
		recs := make([]lineItemRecord, len(f))
		for i := range f {
			recs[i], _ = toLineItemRecord(&f[i])
		}
		var b bytes.Buffer
		if err := writeAll(&b, "transactions", recs, opts); err != nil {
			t.Fatal(err)
		}
		want[k] = b.Bytes()
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			errs <- func() error {
				for pass := range 20 {
					k := (g + pass) % len(files)
					var b bytes.Buffer
					lw := NewLineItemWriter(&b, l)
					for i := range files[k] {
						if err := lw.Write(&files[k][i]); err != nil {
							return err
						}
					}
					if err := lw.Close(); err != nil {
						return err
					}
					if !bytes.Equal(b.Bytes(), want[k]) {
						return fmt.Errorf("goroutine %d pass %d file %d: %d bytes, want %d (different)", g, pass, k, b.Len(), len(want[k]))
					}
				}
				return nil
			}()
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

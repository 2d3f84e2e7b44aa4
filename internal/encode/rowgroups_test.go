package encode

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/report"
)

// serialLineItems is the reference: rows written by one parquet-go writer
// with a period file's options, in batches of lineItemBatch.
func serialLineItems(t testing.TB, l report.ParquetLayout, rows []report.LineItem) []byte {
	t.Helper()
	var out bytes.Buffer
	pw := parquet.NewGenericWriter[lineItemRecord](&out, mustLineItemOptions(t, l, true)...)
	batch := make([]lineItemRecord, 0, lineItemBatch)
	flush := func() {
		if _, err := pw.Write(batch); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range rows {
		rec, err := toLineItemRecord(&rows[i])
		if err != nil {
			t.Fatal(err)
		}
		if batch = append(batch, rec); len(batch) == lineItemBatch {
			flush()
		}
	}
	flush()
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// wideLineItems are n rows whose texts make pages fill within a few
// hundred rows and whose dictionary columns (product_id in layout 2) hold
// thousands of values.
func wideLineItems(n int) []report.LineItem {
	rows := genLineItems(n)
	for i := range rows {
		tx := &rows[i].Tx
		if i%3 != 0 {
			tx.CustomerID = strings.Repeat("c", 200+i%900) + strconv.Itoa(i)
		}
		if tx.ProductID != "" {
			tx.ProductID = "product-" + strconv.Itoa(i%5000)
		}
	}
	return rows
}

// TestRowGroupsSameBytes: a period's file, its row groups encoded in
// parallel and copied in order, is byte for byte the file of one writer,
// in every layout, with one to four encoders, for files of no row, one
// row, a batch's edges, a row group's edges and several row groups.
func TestRowGroupsSameBytes(t *testing.T) {
	g := lineItemRowGroupRows
	sizes := []int{0, 1, lineItemBatch - 1, lineItemBatch, lineItemBatch + 1, g - 1, g, g + 1, 3*g + 777}
	if testing.Short() {
		sizes = []int{0, 1, lineItemBatch + 1, g + 1}
	}
	data := map[string]func(int) []report.LineItem{"gen": genLineItems, "wide": wideLineItems}
	for _, l := range allLayouts {
		for name, gen := range data {
			for _, n := range sizes {
				rows := gen(n)
				want := serialLineItems(t, l, rows)
				for _, encoders := range []int{1, 2, 4} {
					t.Run(fmt.Sprintf("layout=%d/%s/rows=%d/encoders=%d", l, name, n, encoders), func(t *testing.T) {
						var got bytes.Buffer
						lw := newLineItemWriter(&got, l, true)
						lw.rg.max = encoders
						for i := range rows {
							if err := lw.Write(&rows[i]); err != nil {
								t.Fatalf("Write row %d: %v", i, err)
							}
						}
						if err := lw.Close(); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got.Bytes(), want) {
							t.Fatalf("%d bytes, want the single writer's %d", got.Len(), len(want))
						}
					})
				}
			}
		}
	}
}

// TestRowGroupsError: a write error of the period's file is returned by a
// later Write or by Close, stays, and leaves no encoder running.
func TestRowGroupsError(t *testing.T) {
	before := runtime.NumGoroutine()
	requireDiskFull(t, newLineItemWriter(failingWriter{}, report.LatestParquetLayout, true), 5*lineItemRowGroupRows)
	waitGoroutines(t, before)
}

// TestRowGroupsAbort: a period's writer dropped mid-file (the period
// Writer's Close after a failure elsewhere) stops its encoders.
func TestRowGroupsAbort(t *testing.T) {
	before := runtime.NumGoroutine()
	var out bytes.Buffer
	lw := newLineItemWriter(&out, report.LatestParquetLayout, true)
	n := 3*lineItemRowGroupRows + lineItemBatch + 5
	for i := range n {
		li := genLineItem(i, n)
		if err := lw.Write(&li); err != nil {
			t.Fatal(err)
		}
	}
	lw.abort()
	if err := lw.Close(); !errors.Is(err, errLineItemWriterClosed) {
		t.Errorf("Close after abort: %v", err)
	}
	waitGoroutines(t, before)
}

// waitGoroutines fails t unless the goroutines are back to n within a
// few seconds.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before: an encoder was left running", runtime.NumGoroutine(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package encode

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/report"
)

// TestLineItemWriterAsyncSameBytes: encoding batches in a goroutine gives
// the bytes of the plain synchronous use of parquet-go (same options, same
// batches), over several row groups and a last partial batch.
func TestLineItemWriterAsyncSameBytes(t *testing.T) {
	n := 3*lineItemRowGroupRows + 777
	if testing.Short() {
		n = lineItemRowGroupRows + 777
	}
	var got bytes.Buffer
	lw := NewLineItemWriter(&got, report.LatestParquetLayout)
	var want bytes.Buffer
	pw := parquet.NewGenericWriter[lineItemRecord](&want, mustLineItemOptions(t, report.LatestParquetLayout, false)...)
	batch := make([]lineItemRecord, 0, lineItemBatch)
	for i := range n {
		li := genLineItem(i, n)
		if err := lw.Write(&li); err != nil {
			t.Fatal(err)
		}
		rec, err := toLineItemRecord(&li)
		if err != nil {
			t.Fatal(err)
		}
		if batch = append(batch, rec); len(batch) == lineItemBatch {
			if _, err := pw.Write(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := pw.Write(batch); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if lw.Rows() != int64(n) {
		t.Errorf("rows %d, want %d", lw.Rows(), n)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("the writer's %d bytes differ from synchronous parquet-go's %d", got.Len(), want.Len())
	}
}

// TestLineItemWriterAsyncError: a write error in the encoding goroutine is
// returned by a later Write or by Close, and stays.
func TestLineItemWriterAsyncError(t *testing.T) {
	requireDiskFull(t, NewLineItemWriter(failingWriter{}, report.LatestParquetLayout), 4*lineItemRowGroupRows)
}

// requireDiskFull writes up to n line items with lw, whose output fails,
// and fails t unless a Write or Close returns errDiskFull and a second
// Close returns it again.
func requireDiskFull(t *testing.T, lw *LineItemWriter, n int) {
	t.Helper()
	var err error
	for i := 0; i < n && err == nil; i++ {
		li := genLineItem(i, n)
		err = lw.Write(&li)
	}
	if err == nil {
		err = lw.Close()
	}
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("err %v, want errDiskFull", err)
	}
	if err2 := lw.Close(); !errors.Is(err2, errDiskFull) {
		t.Errorf("Close after the error: %v", err2)
	}
}

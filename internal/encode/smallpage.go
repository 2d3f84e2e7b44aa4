package encode

import (
	"fmt"
	"io"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// Small files, small buffers, the same bytes.
//
// parquet-go sizes each column's buffer to the writer's page size (256 KiB
// by default: 32Ki values of an INT64 column) when the writer is made, and
// zeroes it. A period of 100,000 agencies makes 200,000 such writers (each
// agency's summary and transactions Parquet files, a few rows each): at
// 20,000 agencies that was 1.3 MB allocated per summary file and a fifth
// of the period's CPU in allocation and garbage collection.
//
// The page size decides only when a page is cut: when a column's buffered
// values reach 98 % of it (parquet-go's ColumnWriter). A file whose every
// column stays under that bound is one page per column whatever the page
// size, so its bytes do not depend on it. Such a file, whose rows are all
// known before its writer is made, is written with smallPage-byte page
// buffers when its bound (summaryBound, lineItemsBound: an upper bound of
// any column's buffered bytes, every value of every row counted, with 16
// bytes of overhead per value) is at most a quarter of smallPage; any other
// file with the page size of its format (TestSmallPageSameBytes). An
// agency's transactions file is known whole when it has fewer rows than a
// batch (lineItemBatch): its writer is made at its first batch.

//
// A small file's writer is also reused (smallWriters): making one (its
// schema from the struct tags, a column writer and buffer per column) cost
// as much CPU as writing the file. A writer reset (parquet-go's
// GenericWriter.Reset) after it closed a file writes the next one as a
// new writer would (TestSmallWritersSameBytes): its column writers are
// reset after every row group of a file anyway. Only small files' writers
// are reused: a small file never reaches a dictionary's size limit (which
// switches a column to PLAIN and is not undone by a reset), and a writer
// of small pages holds little memory. The pool holds what the agencies
// encoded at a time left (sync.Pool: dropped by the garbage collector),
// not a writer per agency.

// smallPage is the page buffer of a small file's writer.
const smallPage = 16 << 10

// small reports whether a file of bound is written with small pages.
func small(bound int) bool { return bound <= smallPage/4 }

// smallWriters makes the writers of files of one record type T and
// options: a small file's from a pool of writers of small pages.
type smallWriters[T any] struct {
	opts, smallOpts []parquet.WriterOption
	pool            sync.Pool
}

func newSmallWriters[T any](opts []parquet.WriterOption) *smallWriters[T] {
	return &smallWriters[T]{opts: opts, smallOpts: append(opts[:len(opts):len(opts)], parquet.PageBufferSize(smallPage))}
}

// get returns a writer to w of a file of bound (any bound when it is not
// known: the options' page size); pooled: it is a small file's, to give
// back with put once the file is closed.
func (ws *smallWriters[T]) get(w io.Writer, bound int, known bool) (pw *parquet.GenericWriter[T], pooled bool) {
	if !known || !small(bound) {
		return parquet.NewGenericWriter[T](w, ws.opts...), false
	}
	if pw, ok := ws.pool.Get().(*parquet.GenericWriter[T]); ok {
		pw.Reset(w)
		return pw, true
	}
	return parquet.NewGenericWriter[T](w, ws.smallOpts...), true
}

// put gives back a pooled writer whose file closed without error (one
// that failed is dropped: its state is unknown).
func (ws *smallWriters[T]) put(pw *parquet.GenericWriter[T]) {
	resetWriter(pw, nil)
	ws.pool.Put(pw)
}

// resetWriter resets pw, its file closed, to write the next one to w.
func resetWriter[T any](pw *parquet.GenericWriter[T], w io.Writer) {
	// parquet-go v0.32's Reset clears the column chunks of the file
	// written, whose path_in_schema shares its array with the column
	// writer's own path: every later file would have empty paths
	// (parquet-go issue 602). Detached first, the column writers keep
	// theirs.
	if f := pw.File(); f != nil {
		md := f.Metadata()
		for i := range md.RowGroups {
			for j := range md.RowGroups[i].Columns {
				md.RowGroups[i].Columns[j].MetaData.PathInSchema = nil
			}
		}
	}
	pw.Reset(w)
}

// The writers of summary and adjustments files.
var (
	summaryWriters    = newSmallWriters[summaryRecord](parquetOptions())
	adjustmentWriters = newSmallWriters[adjustmentRecord](parquetOptions())
)

// writeSmall writes recs, of bound, as one Parquet file to w with a
// writer of ws.
func writeSmall[T any](w io.Writer, what string, recs []T, ws *smallWriters[T], bound int) error {
	pw, pooled := ws.get(w, bound, true)
	err := writeWith(pw, what, recs)
	if pooled && err == nil {
		ws.put(pw)
	}
	return err
}

// writeAll writes recs as one Parquet file to w with a writer of opts.
func writeAll[T any](w io.Writer, what string, recs []T, opts []parquet.WriterOption) error {
	return writeWith(parquet.NewGenericWriter[T](w, opts...), what, recs)
}

// writeWith writes recs as one Parquet file with pw.
func writeWith[T any](pw *parquet.GenericWriter[T], what string, recs []T) error {
	if _, err := pw.Write(recs); err != nil {
		return fmt.Errorf("write %s parquet: %w", what, err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write %s parquet: close: %w", what, err)
	}
	return nil
}

// summaryBound is the bound of n summary or adjustment records: ten or
// eleven columns, two of them text.
func summaryBound(n int, text func(i int) int) int {
	b := 0
	for i := range n {
		b += text(i) + 12*16
	}
	return b
}

// lineItemsBound is the bound of line-item records (twelve columns).
func lineItemsBound(recs []lineItemRecord) int {
	b := 0
	for i := range recs {
		r := &recs[i]
		b += len(r.TransactionID) + len(r.AgencyID) + len(r.customer) + len(r.product) + len(r.Kind) +
			len(r.Currency) + len(r.PartitionKey) + len(r.SortKey) + 12*16
	}
	return b
}

// lineBatches recycles agencies' batches: a period writes one file per
// agency, most of them one row, and a batch is lineItemBatch records
// (100 KiB) to allocate and zero.
var lineBatches = sync.Pool{New: func() any {
	b := make([]lineItemRecord, 0, lineItemBatch)
	return &b
}}

func getLineBatch() []lineItemRecord { return (*lineBatches.Get().(*[]lineItemRecord))[:0] }

// putLineBatch gives b back, its rows cleared (they hold strings).
func putLineBatch(b []lineItemRecord) {
	if cap(b) != lineItemBatch {
		return
	}
	b = b[:cap(b)]
	clear(b)
	b = b[:0]
	lineBatches.Put(&b)
}

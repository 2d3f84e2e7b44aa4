package encode

import (
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

// smallPage is the page buffer of a small file's writer.
const smallPage = 16 << 10

// smallPageOptions returns opts, with the small page size appended when
// bound allows it.
func smallPageOptions(opts []parquet.WriterOption, bound int) []parquet.WriterOption {
	if bound > smallPage/4 {
		return opts
	}
	return append(opts[:len(opts):len(opts)], parquet.PageBufferSize(smallPage))
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

package encode

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// Parquet layout.
//
// Summary and adjustment amounts are DECIMAL(38,4) on FIXED_LEN_BYTE_ARRAY
// (16 bytes): no sum of a period can overflow them. Line-item amounts are
// DECIMAL(18,4) on INT64 (a single amount is below 10^14, checked when
// the item is validated). parquet-go's decimal tag takes the scale first:
// decimal(4:38) is DECIMAL(38,4). Timestamps are TIMESTAMP(MILLIS,
// UTC-adjusted) on INT64; text is BYTE_ARRAY annotated STRING. Every column
// is REQUIRED except the line items' customer_id and product_id, which are
// OPTIONAL and NULL when the transaction has none.
//
// Files are byte-identical for the same rows: created_by is the constant
// parquetCreatedBy (parquet-go's default embeds its module version), no
// key/value metadata, no timestamps, and one fixed codec. Pages are data
// page v1 with PLAIN (or, for the low-cardinality columns tagged dict,
// dictionary) encoding, parquet-mr's defaults: parquet-go defaults to v2
// pages and DELTA_LENGTH_BYTE_ARRAY strings, which older readers (Athena
// engine 2, Hive, Redshift Spectrum) handle poorly or not at all.
//
// The codec is ZSTD: deterministic (EncodeAll, single goroutine, no CRC),
// read by Athena, Trino, Spark, DuckDB, pandas and Arrow, and it shrinks
// the repetitive keys and ids of line items far more than SNAPPY (a third
// smaller than SNAPPY, a quarter of uncompressed). Dictionary columns are
// the low-cardinality ones (agency_id, kind, currency, partition_key); the
// ids unique per row are PLAIN.
//
// Summary and adjustment files use ZSTD's default level and parquet-go's
// default pages in every layout. Transactions files depend on the period's
// layout (report.ParquetLayout, lineItemLayouts): layout 1, that of every
// period delivered before layouts were recorded, as the other files;
// layout 2, that of a period delivered since, ZSTD SpeedFastest, 1 MiB
// pages in the period's file, and a dictionary on product_id (a catalogue)
// and commission_bps too: 44 % less encoding CPU and 5 % fewer bytes
// (PERFORMANCE.md, Throughput (issue 19)). A period keeps its layout
// (report.LayoutFor): a rebuild compares its files with the delivered ones
// by their bytes.

// parquetCreatedBy is the footer's created_by: fixed, so that files do not
// change when parquet-go is upgraded without a format change.
const parquetCreatedBy = "reportjob"

// lineItemRowGroupRows bounds a transactions row group, and so the
// writer's memory: parquet-go keeps a row group's pages in memory until it
// is flushed.
const lineItemRowGroupRows = 64 * 1024

// lineItemBatch is how many rows LineItemWriter hands parquet-go at once.
const lineItemBatch = 512

var parquetCodec = &zstd.Codec{Level: zstd.SpeedDefault, Concurrency: 1}

func parquetOptions(extra ...parquet.WriterOption) []parquet.WriterOption {
	return append([]parquet.WriterOption{
		&parquet.WriterConfig{CreatedBy: parquetCreatedBy},
		parquet.Compression(parquetCodec),
		parquet.DataPageVersion(1),
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
	}, extra...)
}

// summaryRecord is one row of a summary file; field order is column order.
type summaryRecord struct {
	PeriodStart   time.Time `parquet:"period_start,timestamp(millisecond)"`
	PeriodEnd     time.Time `parquet:"period_end,timestamp(millisecond)"`
	AgencyID      string    `parquet:"agency_id"`
	Currency      string    `parquet:"currency"`
	PurchaseCount int64     `parquet:"purchase_count"`
	RefundCount   int64     `parquet:"refund_count"`
	Gross         [16]byte  `parquet:"gross_amount,decimal(4:38)"`
	Refunds       [16]byte  `parquet:"refund_amount,decimal(4:38)"`
	Net           [16]byte  `parquet:"net_amount,decimal(4:38)"`
	Commission    [16]byte  `parquet:"commission_amount,decimal(4:38)"`
}

// adjustmentRecord is one row of an adjustments file: the summary columns
// as differences, then the revision.
type adjustmentRecord struct {
	PeriodStart   time.Time `parquet:"period_start,timestamp(millisecond)"`
	PeriodEnd     time.Time `parquet:"period_end,timestamp(millisecond)"`
	AgencyID      string    `parquet:"agency_id"`
	Currency      string    `parquet:"currency"`
	PurchaseCount int64     `parquet:"purchase_count"`
	RefundCount   int64     `parquet:"refund_count"`
	Gross         [16]byte  `parquet:"gross_amount,decimal(4:38)"`
	Refunds       [16]byte  `parquet:"refund_amount,decimal(4:38)"`
	Net           [16]byte  `parquet:"net_amount,decimal(4:38)"`
	Commission    [16]byte  `parquet:"commission_amount,decimal(4:38)"`
	Revision      int32     `parquet:"revision"`
}

// lineItemRecord is one row of a transactions file; field order is column
// order. An absent customer_id or product_id is a nil pointer, written as
// NULL (see optionalText). Timestamps keep whole milliseconds (parquet-go
// truncates with time.Time.UnixMilli).
type lineItemRecord struct {
	TransactionID string    `parquet:"transaction_id"`
	AgencyID      string    `parquet:"agency_id,dict"`
	CustomerID    *string   `parquet:"customer_id,optional"`
	ProductID     *string   `parquet:"product_id,optional"`
	Kind          string    `parquet:"kind,dict"`
	Currency      string    `parquet:"currency,dict"`
	Amount        int64     `parquet:"amount,decimal(4:18)"`
	Commission    int64     `parquet:"commission_amount,decimal(4:18)"`
	BPS           int32     `parquet:"commission_bps"`
	RecordedAt    time.Time `parquet:"recorded_at,timestamp(millisecond)"`
	PartitionKey  string    `parquet:"partition_key,dict"`
	SortKey       string    `parquet:"sort_key"`

	// customer and product hold what CustomerID and ProductID point to
	// in a LineItemWriter's batch (see pointOptional): not columns
	// (unexported), and no allocation per row.
	customer, product string
}

// pointOptional points r's optional text columns at r's own copies of
// customer and product (NULL for ""), so that a batch of records needs no
// allocation per row. r must not be copied afterwards: the copy would
// point into r.
func (r *lineItemRecord) pointOptional(customer, product string) {
	r.customer, r.product = customer, product
	r.CustomerID, r.ProductID = nil, nil
	if customer != "" {
		r.CustomerID = &r.customer
	}
	if product != "" {
		r.ProductID = &r.product
	}
}

// decimals converts the amounts of one row and keeps the first error,
// naming the row and the column.
type decimals struct {
	cur  money.Currency
	what func() string // built only on error
	err  error
}

func (d *decimals) d38(column string, t money.Total) [16]byte {
	if d.err != nil {
		return [16]byte{}
	}
	b, err := d.cur.Decimal38(t)
	if err != nil {
		d.err = fmt.Errorf("%s: %s: %w", d.what(), column, err)
	}
	return b
}

func toSummaryRecord(r *report.SummaryRow) (summaryRecord, error) {
	d := decimals{cur: r.Currency, what: func() string {
		return fmt.Sprintf("agency %q currency %s", r.AgencyID, r.Currency.Code)
	}}
	rec := summaryRecord{
		PeriodStart:   r.PeriodStart.UTC(),
		PeriodEnd:     r.PeriodEnd.UTC(),
		AgencyID:      r.AgencyID,
		Currency:      r.Currency.Code,
		PurchaseCount: r.PurchaseCount,
		RefundCount:   r.RefundCount,
		Gross:         d.d38("gross_amount", r.Gross),
		Refunds:       d.d38("refund_amount", r.Refunds),
		Net:           d.d38("net_amount", r.Net),
		Commission:    d.d38("commission_amount", r.Commission),
	}
	return rec, d.err
}

func toLineItemRecord(li *report.LineItem) (lineItemRecord, error) {
	var rec lineItemRecord
	err := fillLineItemRecord(&rec, li)
	rec.CustomerID, rec.ProductID = optionalText(li.Tx.CustomerID), optionalText(li.Tx.ProductID)
	return rec, err
}

// fillLineItemRecord sets r, in place (see pointOptional), to the row of
// li.
func fillLineItemRecord(r *lineItemRecord, li *report.LineItem) error {
	tx := &li.Tx
	var err error
	r.TransactionID = tx.ID
	r.AgencyID = tx.AgencyID
	r.pointOptional(tx.CustomerID, tx.ProductID)
	r.Kind = string(tx.Kind)
	r.Currency = tx.Currency.Code
	if r.Amount, err = tx.Currency.Scale4(tx.Amount); err == nil {
		r.Commission, err = tx.Currency.Scale4(li.Commission)
		if err != nil {
			err = fmt.Errorf("transaction %q agency %q currency %s: commission_amount: %w", tx.ID, tx.AgencyID, tx.Currency.Code, err)
		}
	} else {
		err = fmt.Errorf("transaction %q agency %q currency %s: amount: %w", tx.ID, tx.AgencyID, tx.Currency.Code, err)
	}
	r.BPS = li.BPS
	r.RecordedAt = tx.RecordedAt.UTC()
	r.PartitionKey = tx.PK
	r.SortKey = tx.SK
	return err
}

// optionalText is the value of an optional text column: nil (NULL) for
// "". This is the one place that decides NULL for the line items' absent
// ids. A nil pointer, not parquet-go's "optional" tag on a plain string:
// parquet-go v0.32 writes the zero string of such a column as "" instead
// of NULL in some row orders (three rows [absent, present, absent] give
// the third ""), and a reader's IS NULL then misses it.
func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// WriteSummaryParquet writes rows, already sorted by (agency, currency), as
// a summary Parquet file to w.
func WriteSummaryParquet(w io.Writer, rows []report.SummaryRow) error {
	recs := make([]summaryRecord, len(rows))
	for i := range rows {
		rec, err := toSummaryRecord(&rows[i])
		if err != nil {
			return fmt.Errorf("write summary parquet: %w", err)
		}
		recs[i] = rec
	}
	bound := summaryBound(len(recs), func(i int) int { return len(recs[i].AgencyID) + len(recs[i].Currency) })
	return writeSmall(w, "summary", recs, summaryWriters, bound)
}

// WriteAdjustmentsParquet writes rows, sorted by (agency, currency), as an
// adjustments Parquet file to w.
func WriteAdjustmentsParquet(w io.Writer, rows []report.AdjustmentRow) error {
	recs := make([]adjustmentRecord, len(rows))
	for i := range rows {
		s, err := toSummaryRecord(&rows[i].SummaryRow)
		if err != nil {
			return fmt.Errorf("write adjustments parquet: %w", err)
		}
		recs[i] = adjustmentRecord{
			PeriodStart: s.PeriodStart, PeriodEnd: s.PeriodEnd, AgencyID: s.AgencyID, Currency: s.Currency,
			PurchaseCount: s.PurchaseCount, RefundCount: s.RefundCount,
			Gross: s.Gross, Refunds: s.Refunds, Net: s.Net, Commission: s.Commission,
			Revision: rows[i].Revision,
		}
	}
	bound := summaryBound(len(recs), func(i int) int { return len(recs[i].AgencyID) + len(recs[i].Currency) })
	return writeSmall(w, "adjustments", recs, adjustmentWriters, bound)
}

// errLineItemWriterClosed is returned by Write and Close after Close.
var errLineItemWriterClosed = errors.New("line item writer closed")

// LineItemWriter streams a transactions Parquet file. Rows must arrive in
// file order, (agency, currency, sort key) ascending: a row that sorts
// before the previous one is an error (the caller sorts; this catches a bug
// that would make the file depend on input order). Memory is bounded: rows
// are handed to parquet-go in small batches and a row group is flushed to
// the underlying writer every 64Ki rows.
//
// Errors are sticky: after Write or Close fails, every later call returns
// the same error and the output must be discarded. A LineItemWriter is not
// safe for concurrent use.
//
// An agency's file: each full batch is encoded (parquet-go's column
// buffers and page compression, most of the work) by a goroutine of its
// own while the caller fills the next one: at most one batch is in flight,
// and batches reach parquet-go in order, in the same calls as without it,
// so the bytes do not change. A writer dropped without Close leaves no
// goroutine behind once its last batch is encoded.
//
// A period's file (newLineItemWriter, dataset): its row groups are encoded
// in parallel, one goroutine each, and copied into the file in order
// (rowgroups.go), the same bytes again. Close or abort must be called.
type LineItemWriter struct {
	// pw writes an agency's file (made by writer, at the first batch,
	// from writers; pooled: to give back once closed) to out.
	pw      *parquet.GenericWriter[lineItemRecord]
	pooled  bool
	out     io.Writer
	writers *smallWriters[lineItemRecord]
	// rg, for a period's file, encodes its row groups in parallel
	// (rowgroups.go) instead of pw.
	rg    *rowGroupWriter
	batch []lineItemRecord
	rows  int64
	err   error
	order orderCheck
	// encoding receives the outcome of the batch inflight, being encoded;
	// nil when none is.
	encoding chan error
	inflight []lineItemRecord
	spare    []lineItemRecord
}

// NewLineItemWriter returns a writer of an agency's transactions file in
// layout l to w. Close must be called to write the footer; w itself is not
// closed. An unknown layout is the error of every Write and Close.
func NewLineItemWriter(w io.Writer, l report.ParquetLayout) *LineItemWriter {
	return newLineItemWriter(w, l, false)
}

// newLineItemWriter returns a writer of a transactions file in layout l:
// the period's (dataset) or an agency's.
func newLineItemWriter(w io.Writer, l report.ParquetLayout, dataset bool) *LineItemWriter {
	if !dataset {
		ws, ok := agencyLineWriters[l]
		if !ok {
			return &LineItemWriter{err: fmt.Errorf("write line items: %w: %d", errBadLayout, l)}
		}
		return &LineItemWriter{out: w, writers: ws, batch: getLineBatch()}
	}
	opts, err := lineItemOptions(l, dataset)
	if err != nil {
		return &LineItemWriter{err: fmt.Errorf("write line items: %w", err)}
	}
	return &LineItemWriter{
		rg:    newRowGroupWriter(w, opts),
		batch: make([]lineItemRecord, 0, lineItemBatch),
	}
}

// writer returns the agency file's parquet-go writer, got at its first
// batch: when that batch is the whole file (closing), a pooled one with
// small pages if it is small enough (smallpage.go).
func (lw *LineItemWriter) writer(closing bool) *parquet.GenericWriter[lineItemRecord] {
	if lw.pw == nil {
		lw.pw, lw.pooled = lw.writers.get(lw.out, lineItemsBound(lw.batch), closing)
	}
	return lw.pw
}

// Write adds one line item.
func (lw *LineItemWriter) Write(li *report.LineItem) error {
	if lw.err != nil {
		return lw.err
	}
	if err := lw.order.check(li); err != nil {
		lw.err = fmt.Errorf("write line items: %w", err)
		return lw.err
	}
	lw.batch = append(lw.batch, lineItemRecord{})
	r := &lw.batch[len(lw.batch)-1]
	if err := fillLineItemRecord(r, li); err != nil {
		lw.batch = lw.batch[:len(lw.batch)-1]
		lw.err = fmt.Errorf("write line items: %w", err)
		return lw.err
	}
	lw.rows++
	if len(lw.batch) == cap(lw.batch) {
		return lw.flushBatch(false)
	}
	return nil
}

// flushBatch hands the batch to a goroutine that encodes it, once the
// previous one is encoded; closing: it is the last one.
func (lw *LineItemWriter) flushBatch(closing bool) error {
	if len(lw.batch) == 0 {
		return nil
	}
	if lw.rg != nil {
		err := lw.rg.write(lw.batch)
		lw.batch = lw.rg.batch()
		if err != nil {
			lw.err = fmt.Errorf("write line items: %w", err)
		}
		return lw.err
	}
	if err := lw.wait(); err != nil {
		return err
	}
	pw := lw.writer(closing)
	b := lw.batch
	if closing {
		// The last batch (often the file's only one, of a few rows): no
		// goroutine, nothing is left to overlap it with.
		_, err := pw.Write(b)
		clear(b)
		lw.batch = b[:0]
		if err != nil {
			lw.err = fmt.Errorf("write line items: %w", err)
		}
		return lw.err
	}
	lw.inflight, lw.batch, lw.spare = b, lw.spare, nil
	if lw.batch == nil {
		lw.batch = getLineBatch()
	}
	done := make(chan error, 1)
	lw.encoding = done
	go func() {
		_, err := pw.Write(b)
		clear(b) // drop string references
		done <- err
	}()
	return nil
}

// wait waits for the batch in flight, if any, and returns the sticky
// error.
func (lw *LineItemWriter) wait() error {
	if lw.encoding == nil {
		return lw.err
	}
	err := <-lw.encoding
	lw.encoding = nil
	lw.spare, lw.inflight = lw.inflight[:0], nil
	if err != nil && lw.err == nil {
		lw.err = fmt.Errorf("write line items: %w", err)
	}
	return lw.err
}

// Close writes the remaining rows and the footer. It does not close the
// underlying writer.
func (lw *LineItemWriter) Close() error {
	if lw.err != nil {
		lw.stop()
		return lw.err
	}
	if err := lw.flushBatch(true); err != nil {
		return err
	}
	if err := lw.wait(); err != nil {
		return err
	}
	if lw.rg != nil {
		if err := lw.rg.close(); err != nil {
			lw.err = fmt.Errorf("write line items: %w", err)
			return lw.err
		}
		lw.err = errLineItemWriterClosed
		return nil
	}
	if err := lw.writer(true).Close(); err != nil {
		lw.err = fmt.Errorf("write line items: close: %w", err)
		return lw.err
	}
	if lw.pooled {
		lw.writers.put(lw.pw)
	}
	lw.pw = nil
	lw.err = errLineItemWriterClosed
	putLineBatch(lw.batch)
	putLineBatch(lw.spare)
	lw.batch, lw.spare = nil, nil
	return nil
}

// abort stops the writer's goroutines without finishing the file; the
// output must be discarded, and only after abort or Close returned: until
// then a goroutine may write to it. Close or abort must be called on a
// period's writer (newLineItemWriter, dataset), whose row groups are
// encoded by goroutines that otherwise wait for more rows.
func (lw *LineItemWriter) abort() {
	lw.stop()
	if lw.err == nil {
		lw.err = errLineItemWriterClosed
	}
}

// stop waits for the batch in flight and stops the row group encoders:
// after it no goroutine of lw writes to its output.
func (lw *LineItemWriter) stop() {
	lw.wait()
	if lw.rg != nil {
		lw.rg.abort()
	}
}

// Rows returns how many line items were accepted by Write.
func (lw *LineItemWriter) Rows() int64 { return lw.rows }

// orderCheck refuses a line item that sorts before the previous one.
type orderCheck struct {
	n                       int64
	agency, currency, sortK string
}

func (o *orderCheck) check(li *report.LineItem) error {
	tx := &li.Tx
	if o.n > 0 {
		c := compare3(tx.AgencyID, tx.Currency.Code, tx.SK, o.agency, o.currency, o.sortK)
		if c < 0 {
			return fmt.Errorf("transaction %q (%q %s %q) comes before the previous row (%q %s %q): rows must be sorted by agency, currency, sort key",
				tx.ID, tx.AgencyID, tx.Currency.Code, tx.SK, o.agency, o.currency, o.sortK)
		}
	}
	o.n++
	o.agency, o.currency, o.sortK = tx.AgencyID, tx.Currency.Code, tx.SK
	return nil
}

func compare3(a1, a2, a3, b1, b2, b3 string) int {
	switch {
	case a1 != b1:
		return cmpStr(a1, b1)
	case a2 != b2:
		return cmpStr(a2, b2)
	default:
		return cmpStr(a3, b3)
	}
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

package encode

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// CSV files follow RFC 4180 (CRLF line ends, fields quoted only when
// needed) with a header row and the same columns, in the same order, as
// the Parquet file of the same kind. Timestamps are RFC 3339 in UTC,
// amounts exact in the currency's own digits ("19.99", "1500" for JPY,
// "1.500" for BHD, "-5.00"). A text cell that a spreadsheet would run as a
// formula (starting with = + - @ TAB or CR) is prefixed with a single
// quote ('), as OWASP recommends for CSV injection; numbers are never
// altered, so "-5.00" stays a number.

var (
	summaryCSVHeader = []string{
		"period_start", "period_end", "agency_id", "currency",
		"purchase_count", "refund_count",
		"gross_amount", "refund_amount", "net_amount", "commission_amount",
	}
	adjustmentsCSVHeader = append(append([]string{}, summaryCSVHeader...), "revision")
	lineItemCSVHeader    = []string{
		"transaction_id", "agency_id", "customer_id", "product_id", "kind", "currency",
		"amount", "commission_amount", "commission_bps", "recorded_at", "partition_key", "sort_key",
	}
)

func newCSV(w io.Writer, header []string) (*csv.Writer, error) {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	return cw, cw.Write(header)
}

func summaryCells(rec []string, r *report.SummaryRow) []string {
	c := r.Currency
	return append(rec[:0],
		csvTime(r.PeriodStart), csvTime(r.PeriodEnd), csvText(r.AgencyID), csvText(c.Code),
		strconv.FormatInt(r.PurchaseCount, 10), strconv.FormatInt(r.RefundCount, 10),
		c.FormatTotal(r.Gross), c.FormatTotal(r.Refunds), c.FormatTotal(r.Net), c.FormatTotal(r.Commission),
	)
}

// WriteSummaryCSV writes rows, already sorted, as a summary CSV to w.
func WriteSummaryCSV(w io.Writer, rows []report.SummaryRow) error {
	cw, err := newCSV(w, summaryCSVHeader)
	if err != nil {
		return fmt.Errorf("write summary csv: header: %w", err)
	}
	var rec []string
	for i := range rows {
		rec = summaryCells(rec, &rows[i])
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write summary csv: agency %q currency %s: %w", rows[i].AgencyID, rows[i].Currency.Code, err)
		}
	}
	return flushCSV(cw, "summary")
}

// WriteAdjustmentsCSV writes rows, already sorted, as an adjustments CSV
// to w.
func WriteAdjustmentsCSV(w io.Writer, rows []report.AdjustmentRow) error {
	cw, err := newCSV(w, adjustmentsCSVHeader)
	if err != nil {
		return fmt.Errorf("write adjustments csv: header: %w", err)
	}
	var rec []string
	for i := range rows {
		rec = append(summaryCells(rec, &rows[i].SummaryRow), strconv.FormatInt(int64(rows[i].Revision), 10))
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write adjustments csv: agency %q: %w", rows[i].AgencyID, err)
		}
	}
	return flushCSV(cw, "adjustments")
}

func flushCSV(cw *csv.Writer, what string) error {
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write %s csv: %w", what, err)
	}
	return nil
}

// LineItemCSVWriter streams a transactions CSV. Rows must arrive in file
// order (the caller's; not checked here). Errors are sticky.
type LineItemCSVWriter struct {
	cw   *csv.Writer
	rec  []string
	rows int64
	err  error
}

// NewLineItemCSVWriter writes the header to w and returns the writer.
func NewLineItemCSVWriter(w io.Writer) *LineItemCSVWriter {
	cw, err := newCSV(w, lineItemCSVHeader)
	lw := &LineItemCSVWriter{cw: cw}
	if err != nil {
		lw.err = fmt.Errorf("write line items csv: header: %w", err)
	}
	return lw
}

// Write adds one line item.
func (lw *LineItemCSVWriter) Write(li *report.LineItem) error {
	if lw.err != nil {
		return lw.err
	}
	tx := &li.Tx
	c := tx.Currency
	lw.rec = append(lw.rec[:0],
		csvText(tx.ID), csvText(tx.AgencyID), csvText(tx.CustomerID), csvText(tx.ProductID), string(tx.Kind), csvText(c.Code),
		c.Format(tx.Amount), c.Format(li.Commission), strconv.FormatInt(int64(li.BPS), 10),
		csvTime(tx.RecordedAt), csvText(tx.PK), csvText(tx.SK),
	)
	if err := lw.cw.Write(lw.rec); err != nil {
		lw.err = fmt.Errorf("write line items csv: transaction %q: %w", tx.ID, err)
		return lw.err
	}
	lw.rows++
	return nil
}

// Close flushes what is buffered; it does not close the underlying writer.
func (lw *LineItemCSVWriter) Close() error {
	if lw.err != nil {
		return lw.err
	}
	lw.err = flushCSV(lw.cw, "line items")
	return lw.err
}

// Rows returns how many line items were written.
func (lw *LineItemCSVWriter) Rows() int64 { return lw.rows }

// csvTime formats t as RFC 3339 in UTC, with fractional seconds only when
// t has them ("2024-05-01T00:00:00Z", "2024-05-01T00:00:00.25Z").
func csvTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// csvText neutralises a text cell a spreadsheet would evaluate as a
// formula by prefixing it with a single quote.
func csvText(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

package encode

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// Reading files back: a restatement computes its adjustments from the
// previous revision's summary, and a rebuild of an unchanged revision
// carries its adjustments over. When a dataset file is lost, verify
// --repair reads the same rows back from the agencies' files (CSV or
// Parquet).

var (
	summaryParquetSchema     = sync.OnceValue(func() *parquet.Schema { return parquet.SchemaOf(summaryRecord{}) })
	adjustmentsParquetSchema = sync.OnceValue(func() *parquet.Schema { return parquet.SchemaOf(adjustmentRecord{}) })
)

// ReadSummaryParquet reads a summary file written by WriteSummaryParquet.
// A file of another layout (another version's) is an error listing its
// columns, never misread.
func ReadSummaryParquet(r io.ReaderAt, size int64) ([]report.SummaryRow, error) {
	recs, err := readRecords[summaryRecord](r, size, summaryParquetSchema(), "summary")
	if err != nil {
		return nil, err
	}
	rows := make([]report.SummaryRow, len(recs))
	for i := range recs {
		if rows[i], err = recs[i].row(); err != nil {
			return nil, fmt.Errorf("read summary parquet: row %d: %w", i, err)
		}
	}
	return rows, nil
}

// ReadAdjustmentsParquet reads an adjustments file written by
// WriteAdjustmentsParquet.
func ReadAdjustmentsParquet(r io.ReaderAt, size int64) ([]report.AdjustmentRow, error) {
	recs, err := readRecords[adjustmentRecord](r, size, adjustmentsParquetSchema(), "adjustments")
	if err != nil {
		return nil, err
	}
	rows := make([]report.AdjustmentRow, len(recs))
	for i, rec := range recs {
		s := summaryRecord{
			PeriodStart: rec.PeriodStart, PeriodEnd: rec.PeriodEnd, AgencyID: rec.AgencyID, Currency: rec.Currency,
			PurchaseCount: rec.PurchaseCount, RefundCount: rec.RefundCount,
			Gross: rec.Gross, Refunds: rec.Refunds, Net: rec.Net, Commission: rec.Commission,
		}
		row, err := s.row()
		if err != nil {
			return nil, fmt.Errorf("read adjustments parquet: row %d: %w", i, err)
		}
		rows[i] = report.AdjustmentRow{SummaryRow: row, Revision: rec.Revision}
	}
	return rows, nil
}

// ReadSummaryCSV reads an agency's summary CSV written by WriteSummaryCSV
// back into rows. agency is the agency whose folder holds the file: every
// row must be its. Amounts are exact (the file holds them in the
// currency's own digits); a file of another layout is an error.
func ReadSummaryCSV(r io.Reader, agency string) ([]report.SummaryRow, error) {
	recs, err := readCSV(r, summaryCSVHeader, "summary")
	if err != nil {
		return nil, err
	}
	rows := make([]report.SummaryRow, len(recs))
	for i, rec := range recs {
		if rows[i], err = summaryFromCells(rec, agency); err != nil {
			return nil, fmt.Errorf("read summary csv: row %d: %w", i+1, err)
		}
	}
	return rows, nil
}

// ReadAdjustmentsCSV reads an agency's adjustments CSV written by
// WriteAdjustmentsCSV back into rows, as ReadSummaryCSV does.
func ReadAdjustmentsCSV(r io.Reader, agency string) ([]report.AdjustmentRow, error) {
	recs, err := readCSV(r, adjustmentsCSVHeader, "adjustments")
	if err != nil {
		return nil, err
	}
	rows := make([]report.AdjustmentRow, len(recs))
	n := len(summaryCSVHeader)
	for i, rec := range recs {
		row, err := summaryFromCells(rec[:n], agency)
		if err == nil {
			var rev int64
			if rev, err = strconv.ParseInt(rec[n], 10, 32); err == nil {
				rows[i] = report.AdjustmentRow{SummaryRow: row, Revision: int32(rev)}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("read adjustments csv: row %d: %w", i+1, err)
		}
	}
	return rows, nil
}

// readCSV reads a whole CSV whose first record must be header, and
// returns the records after it.
func readCSV(r io.Reader, header []string, what string) ([][]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s csv: %w", what, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], header) {
		return nil, fmt.Errorf("read %s csv: not a %s file of this layout", what, what)
	}
	return recs[1:], nil
}

// summaryFromCells is the inverse of summaryCells for a row of agency.
func summaryFromCells(rec []string, agency string) (report.SummaryRow, error) {
	if rec[2] != csvText(agency) {
		return report.SummaryRow{}, fmt.Errorf("agency_id %q in agency %q's file", rec[2], agency)
	}
	c, err := money.LookupCurrency(rec[3])
	if err != nil {
		return report.SummaryRow{}, err
	}
	row := report.SummaryRow{AgencyID: agency, Currency: c}
	for _, f := range [...]struct {
		dst  *time.Time
		cell string
	}{{&row.PeriodStart, rec[0]}, {&row.PeriodEnd, rec[1]}} {
		t, err := time.Parse(time.RFC3339Nano, f.cell)
		if err != nil {
			return report.SummaryRow{}, err
		}
		*f.dst = t.UTC()
	}
	for _, f := range [...]struct {
		dst  *int64
		cell string
	}{{&row.PurchaseCount, rec[4]}, {&row.RefundCount, rec[5]}} {
		if *f.dst, err = strconv.ParseInt(f.cell, 10, 64); err != nil {
			return report.SummaryRow{}, err
		}
	}
	for _, f := range [...]struct {
		dst  *money.Total
		cell string
	}{{&row.Gross, rec[6]}, {&row.Refunds, rec[7]}, {&row.Net, rec[8]}, {&row.Commission, rec[9]}} {
		if *f.dst, err = money.ParseTotal(f.cell, c); err != nil {
			return report.SummaryRow{}, err
		}
	}
	return row, nil
}

func readRecords[T any](r io.ReaderAt, size int64, want *parquet.Schema, what string) ([]T, error) {
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("read %s parquet: %w", what, err)
	}
	if !parquet.EqualNodes(f.Schema(), want) {
		return nil, fmt.Errorf("read %s parquet: not a %s file of this layout: columns %s; want %s",
			what, what, describeColumns(f.Schema()), describeColumns(want))
	}
	recs, err := parquet.Read[T](r, size)
	if err != nil {
		return nil, fmt.Errorf("read %s parquet: %w", what, err)
	}
	return recs, nil
}

// row converts a record back to minor units.
func (rec *summaryRecord) row() (report.SummaryRow, error) {
	c, err := money.LookupCurrency(rec.Currency)
	if err != nil {
		return report.SummaryRow{}, err
	}
	row := report.SummaryRow{
		PeriodStart: rec.PeriodStart.UTC(), PeriodEnd: rec.PeriodEnd.UTC(), AgencyID: rec.AgencyID, Currency: c,
		PurchaseCount: rec.PurchaseCount, RefundCount: rec.RefundCount,
	}
	for _, f := range [...]struct {
		dst *money.Total
		b   [16]byte
	}{{&row.Gross, rec.Gross}, {&row.Refunds, rec.Refunds}, {&row.Net, rec.Net}, {&row.Commission, rec.Commission}} {
		if *f.dst, err = c.FromDecimal38(f.b); err != nil {
			return report.SummaryRow{}, fmt.Errorf("agency %q: %w", rec.AgencyID, err)
		}
	}
	return row, nil
}

// describeColumns lists a schema's top-level columns and their types, for
// an error message.
func describeColumns(n parquet.Node) string {
	var b strings.Builder
	for i, f := range n.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name() + " " + f.Type().String())
	}
	return b.String()
}

// ReadLineItemRates reads the transaction_id and commission_bps of every
// row of a transactions file written by LineItemWriter, in file order,
// and calls fn with each (id is valid only during the call). It streams:
// it decodes these two columns only, page by page. A file without these
// columns, or with other types, is an error, never misread.
func ReadLineItemRates(r io.ReaderAt, size int64, fn func(id []byte, bps int32) error) error {
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("read transactions parquet: %w", err)
	}
	idCol, ok1 := f.Schema().Lookup("transaction_id")
	bpsCol, ok2 := f.Schema().Lookup("commission_bps")
	if !ok1 || !ok2 || idCol.Node.Type().Kind() != parquet.ByteArray || bpsCol.Node.Type().Kind() != parquet.Int32 ||
		idCol.MaxDefinitionLevel != 0 || bpsCol.MaxDefinitionLevel != 0 {
		return fmt.Errorf("read transactions parquet: not a transactions file of this layout: columns %s; want transaction_id BYTE_ARRAY and commission_bps INT32, required",
			describeColumns(f.Schema()))
	}
	for i, rg := range f.RowGroups() {
		chunks := rg.ColumnChunks()
		ids, bps := newColumnValues(chunks[idCol.ColumnIndex]), newColumnValues(chunks[bpsCol.ColumnIndex])
		err := func() error {
			defer ids.close()
			defer bps.close()
			for range rg.NumRows() {
				id, err := ids.next()
				if err != nil {
					return err
				}
				b, err := bps.next()
				if err != nil {
					return err
				}
				if err := fn(id.ByteArray(), b.Int32()); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("read transactions parquet: row group %d: %w", i, err)
		}
	}
	return nil
}

// columnValues reads the values of one column chunk, page by page.
type columnValues struct {
	pages parquet.Pages
	vals  parquet.ValueReader
	buf   []parquet.Value
	i, n  int
}

func newColumnValues(c parquet.ColumnChunk) *columnValues {
	return &columnValues{pages: c.Pages(), buf: make([]parquet.Value, 256)}
}

// next returns the next value; a byte array one is valid until the
// next call.
func (c *columnValues) next() (parquet.Value, error) {
	for c.i == c.n {
		if c.vals != nil {
			n, err := c.vals.ReadValues(c.buf)
			c.i, c.n = 0, n
			switch {
			case err == io.EOF:
				c.vals = nil
			case err != nil:
				return parquet.Value{}, err
			}
			continue
		}
		page, err := c.pages.ReadPage()
		if err == io.EOF {
			return parquet.Value{}, io.ErrUnexpectedEOF
		}
		if err != nil {
			return parquet.Value{}, err
		}
		c.vals = page.Values()
	}
	v := c.buf[c.i]
	c.i++
	return v, nil
}

func (c *columnValues) close() { c.pages.Close() }

package encode

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// Reading line items back: the look-ups (package lookup) answer from the
// delivered transactions files, an agency's own (CSV or Parquet) or the
// period's dataset file.

var lineItemParquetSchema = sync.OnceValue(func() *parquet.Schema { return parquet.SchemaOf(lineItemRecord{}) })

// ReadLineItemsParquet reads a transactions file written by
// LineItemWriter and returns its rows in file order: every row, or only
// those f selects. The rows are sorted by (agency, currency, sort key), so
// a row group whose agency_id statistics cannot hold f.Agency is not
// decoded. A file of another layout is an error, never misread.
func ReadLineItemsParquet(r io.ReaderAt, size int64, f LineFilter) ([]report.LineItem, error) {
	agency := f.Agency
	pf, err := parquet.OpenFile(r, size, parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("read transactions parquet: %w", err)
	}
	if !parquet.EqualNodes(pf.Schema(), lineItemParquetSchema()) {
		return nil, fmt.Errorf("read transactions parquet: not a transactions file of this layout: columns %s; want %s",
			describeColumns(pf.Schema()), describeColumns(lineItemParquetSchema()))
	}
	agencyCol, _ := pf.Schema().Lookup("agency_id")
	var out []report.LineItem
	buf := make([]lineItemRecord, lineItemBatch)
	for g, rg := range pf.RowGroups() {
		if agency != "" && !rowGroupMayHold(rg, agencyCol.ColumnIndex, agency) {
			continue
		}
		rows := parquet.NewGenericRowGroupReader[lineItemRecord](rg)
		for {
			n, err := rows.Read(buf)
			for i := range n {
				if (agency != "" && buf[i].AgencyID != agency) || (f.ID != "" && buf[i].TransactionID != f.ID) {
					continue
				}
				li, cerr := buf[i].lineItem()
				if cerr != nil {
					rows.Close()
					return nil, fmt.Errorf("read transactions parquet: row group %d: %w", g, cerr)
				}
				out = append(out, li)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read transactions parquet: row group %d: %w", g, err)
			}
		}
		rows.Close()
	}
	return out, nil
}

// LineFilter selects rows of a transactions file; an empty field selects
// every row.
type LineFilter struct {
	Agency string // agency_id
	ID     string // transaction_id
}

// rowGroupMayHold reports whether the row group's agency_id column can
// hold agency, by its statistics (true when it has none).
func rowGroupMayHold(rg parquet.RowGroup, col int, agency string) bool {
	ci, err := rg.ColumnChunks()[col].ColumnIndex()
	if err != nil || ci == nil || ci.NumPages() == 0 {
		return true
	}
	lo, hi := ci.MinValue(0), ci.MaxValue(ci.NumPages()-1)
	if lo.IsNull() || hi.IsNull() {
		return true
	}
	return string(lo.ByteArray()) <= agency && agency <= string(hi.ByteArray())
}

// lineItem converts a record back to minor units.
func (rec *lineItemRecord) lineItem() (report.LineItem, error) {
	c, err := money.LookupCurrency(rec.Currency)
	if err != nil {
		return report.LineItem{}, fmt.Errorf("transaction %q: %w", rec.TransactionID, err)
	}
	amount, err1 := unscale4(c, rec.Amount)
	comm, err2 := unscale4(c, rec.Commission)
	if err := errors.Join(err1, err2); err != nil {
		return report.LineItem{}, fmt.Errorf("transaction %q: %w", rec.TransactionID, err)
	}
	tx := item.Transaction{
		PK: rec.PartitionKey, SK: rec.SortKey, ID: rec.TransactionID, AgencyID: rec.AgencyID,
		Kind: item.Kind(rec.Kind), Currency: c, Amount: amount, RecordedAt: rec.RecordedAt.UTC(),
	}
	if rec.CustomerID != nil {
		tx.CustomerID = *rec.CustomerID
	}
	if rec.ProductID != nil {
		tx.ProductID = *rec.ProductID
	}
	return report.LineItem{Tx: tx, BPS: rec.BPS, Commission: comm}, nil
}

// unscale4 is the inverse of Currency.Scale4.
func unscale4(c money.Currency, v int64) (int64, error) {
	if c.Digits > 4 || c.Digits < 0 {
		return 0, fmt.Errorf("%s has %d digits: %w", c.Code, c.Digits, money.ErrOverflow)
	}
	d := int64(1)
	for i := c.Digits; i < 4; i++ {
		d *= 10
	}
	if v%d != 0 {
		return 0, fmt.Errorf("amount %d/10^4 has more digits than %s: %w", v, c.Code, money.ErrBadAmount)
	}
	return v / d, nil
}

// ReadLineItemsCSV reads an agency's transactions CSV written by
// LineItemCSVWriter back into rows, in file order. agency is the agency
// whose folder holds the file: every row must be its. Text cells lose the
// quote that neutralised a formula (see csvText); a value that itself
// began with a quote and a formula character reads back without that
// quote (the file cannot tell the two apart).
func ReadLineItemsCSV(r io.Reader, agency string) ([]report.LineItem, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(lineItemCSVHeader)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil || !slices.Equal(head, lineItemCSVHeader) {
		return nil, fmt.Errorf("read transactions csv: not a transactions file of this layout")
	}
	var out []report.LineItem
	for n := 1; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read transactions csv: %w", err)
		}
		li, err := lineItemFromCells(rec, agency)
		if err != nil {
			return nil, fmt.Errorf("read transactions csv: row %d: %w", n, err)
		}
		out = append(out, li)
	}
}

// unText is the inverse of csvText.
func unText(s string) string {
	if len(s) >= 2 && s[0] == '\'' {
		switch s[1] {
		case '=', '+', '-', '@', '\t', '\r':
			return s[1:]
		}
	}
	return s
}

func lineItemFromCells(rec []string, agency string) (report.LineItem, error) {
	if rec[1] != csvText(agency) {
		return report.LineItem{}, fmt.Errorf("agency_id %q in agency %q's file", rec[1], agency)
	}
	c, err := money.LookupCurrency(unText(rec[5]))
	if err != nil {
		return report.LineItem{}, err
	}
	amount, err := money.ParseAmount(rec[6], c)
	if err != nil {
		return report.LineItem{}, fmt.Errorf("amount: %w", err)
	}
	comm, err := money.ParseAmount(rec[7], c)
	if err != nil {
		return report.LineItem{}, fmt.Errorf("commission_amount: %w", err)
	}
	bps, err := strconv.ParseInt(rec[8], 10, 32)
	if err != nil {
		return report.LineItem{}, fmt.Errorf("commission_bps %q: %w", rec[8], err)
	}
	at, err := time.Parse(time.RFC3339Nano, rec[9])
	if err != nil {
		return report.LineItem{}, fmt.Errorf("recorded_at %q: %w", rec[9], err)
	}
	kind := item.Kind(rec[4])
	if kind != item.Purchase && kind != item.Refund {
		return report.LineItem{}, fmt.Errorf("kind %q", rec[4])
	}
	tx := item.Transaction{
		ID: unText(rec[0]), AgencyID: agency, CustomerID: unText(rec[2]), ProductID: unText(rec[3]), Kind: kind,
		Currency: c, Amount: amount, RecordedAt: at.UTC(), PK: unText(rec[10]), SK: unText(rec[11]),
	}
	return report.LineItem{Tx: tx, BPS: int32(bps), Commission: comm}, nil
}

// IsLineItemsKey reports whether key names a transactions file (the
// dataset's or an agency's) and which format: "parquet" or "csv".
func IsLineItemsKey(key string) (format string, ok bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	if !strings.HasPrefix(name, "transactions-") {
		return "", false
	}
	switch {
	case strings.HasSuffix(name, ".parquet"):
		return "parquet", true
	case strings.HasSuffix(name, ".csv"):
		return "csv", true
	}
	return "", false
}

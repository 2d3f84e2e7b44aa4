package directory

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/suggest"
)

// columns is the CSV header: every column, in any order.
var columns = []string{"agency_id", "legal_name", "address", "country", "tax_id", "emails", "locale", "payment_terms"}

// parseCSV reads a CSV directory: a header naming the columns, then one
// row per agency; address lines are separated by newlines inside the
// quoted cell, e-mail addresses by ";". Rows are named by the line they
// start on, the header being line 1.
func parseCSV(name string, data []byte) (*Directory, error) {
	c := newCollector(name)
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a spreadsheet's byte order mark
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file: want a header " + strings.Join(columns, ","))
		}
		c.fail("", "", "", csvReason(err))
		return c.result()
	}
	index, ok := c.header(header)
	if !ok {
		return c.result()
	}
	r.FieldsPerRecord = len(header)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				c.fail(fmt.Sprintf("row %d", pe.StartLine), "", "",
					fmt.Sprintf("%d fields, the header has %d", len(rec), len(header)))
				continue
			}
			c.fail("", "", "", csvReason(err)) // the rest cannot be read reliably
			break
		}
		line, _ := r.FieldPos(0)
		row := fmt.Sprintf("row %d", line)
		get := func(col string) string { return strings.TrimSpace(rec[index[col]]) }
		c.add(row, row, raw{
			id:        rec[index["agency_id"]],
			legalName: get("legal_name"),
			address:   splitList(strings.ReplaceAll(rec[index["address"]], "\r\n", "\n"), "\n"),
			country:   get("country"),
			taxID:     get("tax_id"),
			emails:    splitList(rec[index["emails"]], ";"),
			locale:    get("locale"),
			terms:     get("payment_terms"),
		})
	}
	return c.result()
}

// header maps each column to its index; it reports unknown, repeated and
// missing columns.
func (c *collector) header(h []string) (map[string]int, bool) {
	index := map[string]int{}
	ok := true
	for i, col := range h {
		col = strings.TrimSpace(col)
		switch _, dup := index[col]; {
		case !slices.Contains(columns, col):
			c.fail("row 1", "header", col, "unknown column"+suggest.Hint(col, columns))
			ok = false
		case dup:
			c.fail("row 1", "header", col, "column given twice")
			ok = false
		default:
			index[col] = i
		}
	}
	var missing []string
	for _, col := range columns {
		if _, found := index[col]; !found {
			missing = append(missing, col)
		}
	}
	if len(missing) > 0 {
		c.fail("row 1", "header", strings.Join(h, ","), "missing column(s) "+strings.Join(missing, ", ")+
			"; want "+strings.Join(columns, ","))
		ok = false
	}
	return index, ok
}

// csvReason is a CSV syntax error without the "parse error on" prefix's
// duplication.
func csvReason(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return err.Error()
}

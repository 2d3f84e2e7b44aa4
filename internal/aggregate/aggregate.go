// Package aggregate is the stage between collect and encode: it sums a
// period's billed transactions per (agency, currency) in 128 bits, puts
// its line items in file order (agency, currency, sort key) with an
// external sort, and computes the adjustments between two revisions of a
// period.
//
// Commission per transaction is amount x bps / 10000, rounded half to even
// at the currency's minor unit; a refund's commission counts negative;
// net = gross - refunds. The rate is the one package pricing gives
// (Options.Prices), asked once per transaction, in Add, and kept with its
// line item.
package aggregate

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/extsort"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
)

// Commission returns tx's signed commission in minor units at bps.
func Commission(tx *item.Transaction, bps int32) int64 {
	c := money.Commission(tx.Amount, int64(bps))
	if tx.Kind == item.Refund {
		return -c
	}
	return c
}

// Options shape an Aggregator.
type Options struct {
	// Prices prices the period's transactions (pricing.ForPeriod). With
	// billed rates it needs the transactions in ascending id order, the
	// order collect's Dedupe emits them in.
	Prices *pricing.Pricer
	// LineItems keeps the line items, in file order (report.line_items).
	LineItems bool
	// Dir holds the line items' spill files; SortMemBytes is the sort's
	// memory budget (0: the default).
	Dir          string
	SortMemBytes int
}

// ErrOverflow means a sum does not fit 128 bits. It cannot happen with
// valid items (each below 10^18 in DECIMAL(18,4) units, at most 2^63 of
// them: below 10^38), and is checked all the same.
var ErrOverflow = errors.New("sum out of range")

// Aggregator sums one period. Add is not safe for concurrent use.
type Aggregator struct {
	p report.Period
	o Options
	// sums are the rows by agency, then currency (usually one): a map
	// keyed by one string is cheaper than one keyed by a pair.
	sums  map[string][]*report.SummaryRow
	nrows int
	lines *extsort.Sorter
	key   []byte
	val   []byte
}

// New returns an Aggregator of period p.
func New(p report.Period, o Options) *Aggregator {
	a := &Aggregator{p: p, o: o, sums: make(map[string][]*report.SummaryRow)}
	if o.LineItems {
		a.lines = extsort.New(extsort.Options{Dir: o.Dir, MemBytes: o.SortMemBytes})
	}
	return a
}

// ErrSummarized is the error of Add and Summary after Summary.
var ErrSummarized = errors.New("aggregate: the period is summarized already")

// Add adds one billed transaction.
func (a *Aggregator) Add(tx *item.Transaction) error {
	if a.sums == nil {
		return ErrSummarized
	}
	r := a.row(tx)
	bps, err := a.o.Prices.Of(tx)
	if err != nil {
		return fmt.Errorf("price transaction %q: %w", tx.ID, err)
	}
	c := Commission(tx, bps)
	var ok1, ok2 bool
	if tx.Kind == item.Refund {
		r.RefundCount++
		r.Refunds, ok1 = r.Refunds.Add(money.TotalOf(tx.Amount))
	} else {
		r.PurchaseCount++
		r.Gross, ok1 = r.Gross.Add(money.TotalOf(tx.Amount))
	}
	r.Commission, ok2 = r.Commission.Add(money.TotalOf(c))
	if !ok1 || !ok2 {
		return fmt.Errorf("agency %q %s: %w", tx.AgencyID, tx.Currency.Code, ErrOverflow)
	}
	if a.lines != nil {
		// The value leaves out what lineKey holds: the keys, the agency
		// and the currency code (lineDecoder takes them from the key).
		a.key = lineKey(a.key[:0], tx)
		a.val = binary.AppendUvarint(a.val[:0], uint64(len(tx.ID)))
		a.val = append(a.val, tx.ID...)
		body := *tx
		body.AgencyID, body.Currency.Code = "", ""
		a.val = binary.BigEndian.AppendUint32(body.AppendBinaryBody(a.val), uint32(bps))
		if err := a.lines.Add(a.key, a.val); err != nil {
			return fmt.Errorf("sort line items: %w", err)
		}
	}
	return nil
}

// row returns the summary row of tx's agency and currency, made on first
// use.
func (a *Aggregator) row(tx *item.Transaction) *report.SummaryRow {
	rows := a.sums[tx.AgencyID]
	for _, r := range rows {
		if r.Currency.Code == tx.Currency.Code {
			return r
		}
	}
	// Copies of the id and the currency code: tx's strings share memory
	// with the rest of tx, and with other transactions (item.Strings),
	// which the row would keep alive; a map key in that memory is also in
	// a cache line of its own (cold at the next look-up's compare).
	agency := tx.AgencyID
	if rows == nil {
		agency = strings.Clone(agency)
	} else {
		agency = rows[0].AgencyID
	}
	cur := tx.Currency
	cur.Code = strings.Clone(cur.Code)
	r := &report.SummaryRow{PeriodStart: a.p.Start.UTC(), PeriodEnd: a.p.End.UTC(), AgencyID: agency, Currency: cur}
	a.sums[agency] = append(rows, r)
	a.nrows++
	return r
}

// lineKey is the line items' order: agency, currency, sort key, partition
// key (ids and codes hold no 0x00).
func lineKey(dst []byte, tx *item.Transaction) []byte {
	dst = append(dst, tx.AgencyID...)
	dst = append(dst, 0)
	dst = append(dst, tx.Currency.Code...)
	dst = append(dst, 0)
	dst = append(dst, tx.SK...)
	dst = append(dst, 0)
	return append(dst, tx.PK...)
}

// Summary returns the period's summary rows, sorted by (agency, currency),
// with Net computed. It is called once, after the last Add: the rows by
// agency are released as it returns (a period of 100,000 agencies holds
// them twice otherwise, 40 MB).
func (a *Aggregator) Summary() ([]report.SummaryRow, error) {
	if a.sums == nil {
		return nil, ErrSummarized
	}
	defer func() { a.sums = nil }()
	rows := make([]report.SummaryRow, 0, a.nrows)
	for _, agency := range a.sums {
		for _, r := range agency {
			net, ok := r.Gross.Sub(r.Refunds)
			if !ok {
				return nil, fmt.Errorf("agency %q %s: net: %w", r.AgencyID, r.Currency.Code, ErrOverflow)
			}
			row := *r
			row.Net = net
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, compareRows)
	return rows, nil
}

func compareRows(x, y report.SummaryRow) int {
	return cmp.Or(cmp.Compare(x.AgencyID, y.AgencyID), cmp.Compare(x.Currency.Code, y.Currency.Code))
}

// Close releases the line items' sort (its spill files).
func (a *Aggregator) Close() error {
	if a.lines == nil {
		return nil
	}
	return a.lines.Close()
}

// CurrencyTotals sums rows per currency, for the manifest.
func CurrencyTotals(rows []report.SummaryRow) ([]report.CurrencyTotal, error) {
	type acc struct {
		cur      money.Currency
		agencies int64
		row      report.SummaryRow
	}
	by := map[string]*acc{}
	for _, r := range rows {
		a := by[r.Currency.Code]
		if a == nil {
			a = &acc{cur: r.Currency}
			by[r.Currency.Code] = a
		}
		a.agencies++
		if err := addRow(&a.row, r, 1); err != nil {
			return nil, fmt.Errorf("totals %s: %w", r.Currency.Code, err)
		}
	}
	out := make([]report.CurrencyTotal, 0, len(by))
	for _, a := range by {
		c := a.cur
		out = append(out, report.CurrencyTotal{
			Currency: c.Code, Agencies: a.agencies,
			PurchaseCount: a.row.PurchaseCount, RefundCount: a.row.RefundCount,
			Gross: c.FormatTotal(a.row.Gross), Refunds: c.FormatTotal(a.row.Refunds),
			Net: c.FormatTotal(a.row.Net), Commission: c.FormatTotal(a.row.Commission),
		})
	}
	slices.SortFunc(out, func(x, y report.CurrencyTotal) int { return cmp.Compare(x.Currency, y.Currency) })
	return out, nil
}

// addRow adds sign*r's counts and amounts to dst.
func addRow(dst *report.SummaryRow, r report.SummaryRow, sign int64) error {
	dst.PurchaseCount += sign * r.PurchaseCount
	dst.RefundCount += sign * r.RefundCount
	for _, f := range [...]struct{ dst, v *money.Total }{
		{&dst.Gross, &r.Gross}, {&dst.Refunds, &r.Refunds}, {&dst.Net, &r.Net}, {&dst.Commission, &r.Commission},
	} {
		v := *f.v
		if sign < 0 {
			v = v.Neg()
		}
		s, ok := f.dst.Add(v)
		if !ok {
			return ErrOverflow
		}
		*f.dst = s
	}
	return nil
}

// Adjustments returns what revision adds to the previous one, per (agency,
// currency): cur - prev, for every pair whose counts or amounts differ,
// sorted by (agency, currency). Both inputs are sorted as Summary returns
// them.
func Adjustments(prev, cur []report.SummaryRow, revision int32) ([]report.AdjustmentRow, error) {
	var out []report.AdjustmentRow
	add := func(base report.SummaryRow, plus, minus *report.SummaryRow) error {
		d := report.SummaryRow{PeriodStart: base.PeriodStart, PeriodEnd: base.PeriodEnd, AgencyID: base.AgencyID, Currency: base.Currency}
		if plus != nil {
			if err := addRow(&d, *plus, 1); err != nil {
				return err
			}
		}
		if minus != nil {
			if err := addRow(&d, *minus, -1); err != nil {
				return err
			}
		}
		if d.PurchaseCount == 0 && d.RefundCount == 0 && d.Gross.IsZero() && d.Refunds.IsZero() &&
			d.Net.IsZero() && d.Commission.IsZero() {
			return nil
		}
		out = append(out, report.AdjustmentRow{SummaryRow: d, Revision: revision})
		return nil
	}
	i, j := 0, 0
	for i < len(prev) || j < len(cur) {
		var err error
		switch {
		case j == len(cur) || i < len(prev) && compareRows(prev[i], cur[j]) < 0:
			err = add(prev[i], nil, &prev[i])
			i++
		case i == len(prev) || compareRows(prev[i], cur[j]) > 0:
			err = add(cur[j], &cur[j], nil)
			j++
		default:
			err = add(cur[j], &cur[j], &prev[i])
			i, j = i+1, j+1
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

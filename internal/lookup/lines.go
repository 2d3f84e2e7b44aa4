package lookup

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
)

// Line is one billed line of the delivered record.
type Line struct {
	Period   report.Period
	Revision int
	// Key is the object the line was read from.
	Key string
	report.LineItem
}

func (l *Line) pos() position { return position{SK: l.Tx.SK, ID: l.Tx.ID} }

// Query asks for a page of a listing.
type Query struct {
	// Agency is the agency listed (transactions), or the only agency whose
	// rejects are listed ("" for all).
	Agency string
	// From and To select the periods that start in [From, To); zero leaves
	// a side open.
	From, To time.Time
	// Limit is the page size (DefaultLimit when 0).
	Limit int
	// Cursor continues a listing (Page.Next of the page before); "" starts
	// at the newest row.
	Cursor string
}

// Page is one page of a listing.
type Page[T any] struct {
	Rows []T
	// Next continues the listing after the last row; "" when the listing
	// is done.
	Next string
	// Restated names the cursor's period when it was restated since the
	// cursor was made (the page shows its new revision after the
	// position).
	Restated []report.Period
	// Periods counts the manifests read.
	Periods int
	// WithoutLineItems are the periods read that billed the agency but
	// delivered no line items (report.line_items was false when they were
	// published): their lines cannot be listed, newest first.
	WithoutLineItems []NoLineItems
}

// NoLineItems is a period whose revision billed an agency's transactions
// without delivering line items: its summary has the agency's totals, no
// file has the lines.
type NoLineItems struct {
	Period   report.Period
	Revision int
	// Transactions are the billed transactions (purchases and refunds):
	// the agency's in the period's summary (Transactions), the period's
	// (ByID).
	Transactions int64
}

func (q Query) limit() int {
	if q.Limit <= 0 {
		return DefaultLimit
	}
	return q.Limit
}

// Transactions returns a page of q.Agency's billed lines, newest first.
func (r *Reader) Transactions(ctx context.Context, q Query) (Page[Line], error) {
	var pg Page[Line]
	if q.Agency == "" {
		return pg, fmt.Errorf("transactions: no agency")
	}
	ps, cur, err := r.resume(q, KindTransactions)
	if err != nil {
		return pg, err
	}
	limit := q.limit()
	var last *Line
	more := false
	err = r.manifests(ctx, ps, func(i int, m *report.Manifest) (bool, error) {
		if m == nil {
			return true, nil
		}
		pg.Periods++
		if !lineItemsDelivered(m) {
			n, err := r.agencyBilled(ctx, m, q.Agency)
			if n > 0 {
				pg.WithoutLineItems = append(pg.WithoutLineItems, NoLineItems{Period: m.Period(), Revision: m.Revision, Transactions: n})
			}
			return err == nil, err
		}
		lines, err := r.agencyLines(ctx, m, q.Agency)
		if err != nil {
			return false, err
		}
		slices.SortFunc(lines, func(a, b Line) int { return a.pos().compareNewest(b.pos()) })
		if cur != nil && m.PeriodStart.Equal(cur.Period) {
			if m.Revision != cur.Rev {
				pg.Restated = append(pg.Restated, m.Period())
			}
			at := position{SK: cur.SK, ID: cur.ID}
			k, _ := slices.BinarySearchFunc(lines, at, func(l Line, at position) int {
				if c := l.pos().compareNewest(at); c != 0 {
					return c
				}
				return -1 // the cursor's own row counts as shown
			})
			lines = lines[k:]
		}
		n := min(len(lines), limit-len(pg.Rows))
		pg.Rows = append(pg.Rows, lines[:n]...)
		if len(pg.Rows) < limit {
			return true, nil
		}
		last = &pg.Rows[len(pg.Rows)-1]
		more = n < len(lines) || i+1 < len(ps)
		return false, nil
	})
	if err != nil {
		return Page[Line]{}, err
	}
	if more {
		pg.Next = Cursor{Kind: KindTransactions, Scope: q.Agency, Period: last.Period.Start, SK: last.Tx.SK, ID: last.Tx.ID, Rev: last.Revision}.Encode()
	}
	return pg, nil
}

// agencyLines returns agency's lines in the period m delivered, in no
// particular order: from the agency's own transactions file where the
// period has agency files, else from the period's transactions Parquet
// (after its summary says the agency has rows).
func (r *Reader) agencyLines(ctx context.Context, m *report.Manifest, agency string) ([]Line, error) {
	if m.Transactions == 0 {
		return nil, nil
	}
	p := m.Period()
	prefix := report.AgencyPrefix(agency, p)
	agencyFiles := len(m.Parts) > 0 // only agency files make a manifest that big
	var parquetKey, csvKey string
	pick := func(key string) {
		if !strings.HasPrefix(key, prefix) {
			return
		}
		switch f, _ := encode.IsLineItemsKey(key); f {
		case "parquet":
			parquetKey = key
		case "csv":
			csvKey = key
		}
	}
	for _, f := range m.Files {
		if strings.HasPrefix(f.Key, report.DirAgencies+"/") {
			agencyFiles = true
		}
		pick(f.Key)
	}
	if len(m.Parts) > 0 {
		// The agency objects are in the parts: one LIST of the agency's
		// folder is cheaper than reading every part. The folder holds
		// exactly the latest revision's objects once its publication
		// finished.
		as, err := r.list(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, a := range as {
			pick(a.Key)
		}
	}
	switch {
	case parquetKey != "":
		b, err := r.readAll(ctx, parquetKey)
		if err != nil {
			return nil, err
		}
		lis, err := encode.ReadLineItemsParquet(bytes.NewReader(b), int64(len(b)), encode.LineFilter{Agency: agency})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", parquetKey, err)
		}
		return toLines(m, parquetKey, lis), nil
	case csvKey != "":
		b, err := r.readAll(ctx, csvKey)
		if err != nil {
			return nil, err
		}
		lis, err := encode.ReadLineItemsCSV(bytes.NewReader(b), agency)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", csvKey, err)
		}
		return toLines(m, csvKey, lis), nil
	case agencyFiles:
		return nil, nil // the period has agency files, none of them this agency's line items
	}
	tf, ok := datasetFile(m, report.DatasetTransactions)
	if !ok || tf.Rows == 0 {
		return nil, nil // no line items delivered (report.line_items off)
	}
	if sf, ok := datasetFile(m, report.DatasetSummary); ok {
		b, err := r.readAll(ctx, sf.Key)
		if err != nil {
			return nil, err
		}
		rows, err := encode.ReadSummaryParquet(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sf.Key, err)
		}
		if !slices.ContainsFunc(rows, func(s report.SummaryRow) bool { return s.AgencyID == agency }) {
			return nil, nil
		}
	}
	b, err := r.readAll(ctx, tf.Key)
	if err != nil {
		return nil, err
	}
	lis, err := encode.ReadLineItemsParquet(bytes.NewReader(b), int64(len(b)), encode.LineFilter{Agency: agency})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tf.Key, err)
	}
	return toLines(m, tf.Key, lis), nil
}

// lineItemsDelivered reports whether m's revision delivered its line
// items: a revision that billed transactions with report.line_items on
// lists a transactions Parquet with rows, or agency transactions files
// (a manifest in parts has them: only they make it that big); one with it
// off lists neither.
func lineItemsDelivered(m *report.Manifest) bool {
	if tf, ok := datasetFile(m, report.DatasetTransactions); m.Transactions == 0 || ok && tf.Rows > 0 || len(m.Parts) > 0 {
		return true
	}
	return slices.ContainsFunc(m.Files, func(f report.FileInfo) bool {
		_, ok := encode.IsLineItemsKey(f.Key)
		return ok && strings.HasPrefix(f.Key, report.DirAgencies+"/")
	})
}

// agencyBilled returns how many transactions of agency the summary of m
// bills (0 when the period has no summary file).
func (r *Reader) agencyBilled(ctx context.Context, m *report.Manifest, agency string) (int64, error) {
	sf, ok := datasetFile(m, report.DatasetSummary)
	if !ok {
		return 0, nil
	}
	b, err := r.readAll(ctx, sf.Key)
	if err != nil {
		return 0, err
	}
	rows, err := encode.ReadSummaryParquet(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", sf.Key, err)
	}
	var n int64
	for _, s := range rows {
		if s.AgencyID == agency {
			n += s.PurchaseCount + s.RefundCount
		}
	}
	return n, nil
}

func toLines(m *report.Manifest, key string, lis []report.LineItem) []Line {
	out := make([]Line, len(lis))
	for i, li := range lis {
		out[i] = Line{Period: m.Period(), Revision: m.Revision, Key: key, LineItem: li}
	}
	return out
}

package encode

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
)

// statementRecordNumbered is one row of statements/month=M/statements-H.parquet
// and of an agency's statement-H.parquet: one agency's month in one
// currency. Field order is column order. statementRecord is the layout
// before statement numbers (no statement_number column; its Go type name
// is the file's schema name, so it keeps it), written for a month whose
// statements have none (published before them: a restore gives their
// bytes again) and read back alike.
type statementRecordNumbered struct {
	Month                  string   `parquet:"month"`
	Status                 string   `parquet:"status"`
	AgencyID               string   `parquet:"agency_id"`
	Currency               string   `parquet:"currency"`
	PurchaseCount          int64    `parquet:"purchase_count"`
	RefundCount            int64    `parquet:"refund_count"`
	Gross                  [16]byte `parquet:"gross_amount,decimal(4:38)"`
	Refunds                [16]byte `parquet:"refund_amount,decimal(4:38)"`
	Net                    [16]byte `parquet:"net_amount,decimal(4:38)"`
	Commission             [16]byte `parquet:"commission_amount,decimal(4:38)"`
	PriorPeriodAdjustments [16]byte `parquet:"prior_period_adjustments,decimal(4:38)"`
	CommissionDue          [16]byte `parquet:"commission_due,decimal(4:38)"`
	StatementRevision      int32    `parquet:"statement_revision"`
	StatementNumber        string   `parquet:"statement_number"`
}

type statementRecord struct {
	Month                  string   `parquet:"month"`
	Status                 string   `parquet:"status"`
	AgencyID               string   `parquet:"agency_id"`
	Currency               string   `parquet:"currency"`
	PurchaseCount          int64    `parquet:"purchase_count"`
	RefundCount            int64    `parquet:"refund_count"`
	Gross                  [16]byte `parquet:"gross_amount,decimal(4:38)"`
	Refunds                [16]byte `parquet:"refund_amount,decimal(4:38)"`
	Net                    [16]byte `parquet:"net_amount,decimal(4:38)"`
	Commission             [16]byte `parquet:"commission_amount,decimal(4:38)"`
	PriorPeriodAdjustments [16]byte `parquet:"prior_period_adjustments,decimal(4:38)"`
	CommissionDue          [16]byte `parquet:"commission_due,decimal(4:38)"`
	StatementRevision      int32    `parquet:"statement_revision"`
}

// WriteStatementsParquet writes one row per agency and currency of stmts
// (sorted by agency id, each's lines by currency) to w: with a
// statement_number column unless no statement has a number.
func WriteStatementsParquet(w io.Writer, stmts []*statement.Agency) error {
	numbered := false
	for _, s := range stmts {
		numbered = numbered || s.Doc.Number != ""
	}
	sw := NewStatementsWriter(w, numbered, "")
	for _, s := range stmts {
		if err := sw.Add(s); err != nil {
			return err
		}
	}
	return sw.Close()
}

// statementsBatch is how many rows a StatementsWriter hands parquet-go at
// a time: a multiple of the 64 rows parquet-go writes at a time (and checks
// its pages after), so that the pages, and so the bytes, are those of one
// call with every row.
const statementsBatch = 16 * 64

// StatementsWriter streams a statements Parquet file, one agency's
// statement at a time (in agency id order): the same bytes as
// WriteStatementsParquet of them all, with numbered telling the layout
// (whether any statement has a number), in memory bounded by one batch of
// rows. Errors are sticky. Not safe for concurrent use.
type StatementsWriter struct {
	numbered bool
	recs     []statementRecordNumbered
	v3       []statementRecord
	pw       *parquet.GenericWriter[statementRecordNumbered]
	pw3      *parquet.GenericWriter[statementRecord]
	err      error
}

// NewStatementsWriter starts a statements Parquet file in w. With dir
// set, the encoded pages wait for the footer in temp files there instead
// of memory (parquet-go holds a row group's pages until it is written: 45
// MB for 100,000 rows); the bytes are the same, but for a file without
// rows (parquet-go then writes an empty page), so dir is for a file known to
// have rows.
func NewStatementsWriter(w io.Writer, numbered bool, dir string) *StatementsWriter {
	sw := &StatementsWriter{numbered: numbered}
	opts := parquetOptions()
	if dir != "" {
		opts = parquetOptions(parquet.ColumnPageBuffers(parquet.NewFileBufferPool(dir, "statements-pages-*")))
	}
	if numbered {
		sw.pw = parquet.NewGenericWriter[statementRecordNumbered](w, opts...)
	} else {
		sw.pw3 = parquet.NewGenericWriter[statementRecord](w, opts...)
	}
	return sw
}

// Add writes s's rows (one per line).
func (sw *StatementsWriter) Add(s *statement.Agency) error {
	if sw.err != nil {
		return sw.err
	}
	for _, l := range s.Lines {
		d := decimals{cur: l.Currency, what: func() string {
			return fmt.Sprintf("agency %q currency %s", s.AgencyID, l.Currency.Code)
		}}
		r := statementRecordNumbered{
			Month: s.Month, Status: string(s.Status), AgencyID: s.AgencyID, Currency: l.Currency.Code,
			PurchaseCount: l.PurchaseCount, RefundCount: l.RefundCount,
			Gross: d.d38("gross_amount", l.Gross), Refunds: d.d38("refund_amount", l.Refunds),
			Net: d.d38("net_amount", l.Net), Commission: d.d38("commission_amount", l.Commission),
			PriorPeriodAdjustments: d.d38("prior_period_adjustments", l.PriorPeriodAdjustments),
			CommissionDue:          d.d38("commission_due", l.CommissionDue),
			StatementRevision:      int32(s.Revision),
			StatementNumber:        s.Doc.Number,
		}
		if d.err != nil {
			sw.err = fmt.Errorf("write statements parquet: %w", d.err)
			return sw.err
		}
		if sw.numbered {
			sw.recs = append(sw.recs, r)
		} else {
			sw.v3 = append(sw.v3, statementRecord{Month: r.Month, Status: r.Status, AgencyID: r.AgencyID, Currency: r.Currency,
				PurchaseCount: r.PurchaseCount, RefundCount: r.RefundCount, Gross: r.Gross, Refunds: r.Refunds, Net: r.Net,
				Commission: r.Commission, PriorPeriodAdjustments: r.PriorPeriodAdjustments, CommissionDue: r.CommissionDue,
				StatementRevision: r.StatementRevision})
		}
		if len(sw.recs) >= statementsBatch || len(sw.v3) >= statementsBatch {
			if err := sw.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (sw *StatementsWriter) flush() error {
	var err error
	if sw.numbered {
		_, err = sw.pw.Write(sw.recs)
		sw.recs = sw.recs[:0]
	} else {
		_, err = sw.pw3.Write(sw.v3)
		sw.v3 = sw.v3[:0]
	}
	if err != nil {
		sw.err = fmt.Errorf("write statements parquet: %w", err)
	}
	return sw.err
}

// Close writes the rows left and the file's footer. After an error it
// only gives back what the writer holds (its page files) and returns it.
func (sw *StatementsWriter) Close() error {
	if sw.err != nil {
		if sw.numbered {
			_ = sw.pw.Close()
		} else {
			_ = sw.pw3.Close()
		}
		return sw.err
	}
	if err := sw.flush(); err != nil {
		return err
	}
	var err error
	if sw.numbered {
		err = sw.pw.Close()
	} else {
		err = sw.pw3.Close()
	}
	if err != nil {
		sw.err = fmt.Errorf("write statements parquet: close: %w", err)
	}
	return sw.err
}

// StatementRow is one row of a statements Parquet file, read back.
type StatementRow struct {
	Month, Status, AgencyID string
	Currency                money.Currency
	statement.Line
	StatementRevision int32
	// StatementNumber is "" in a file written before statement numbers.
	StatementNumber string
}

// ReadStatementsParquet reads a statements Parquet file (either layout).
func ReadStatementsParquet(r io.ReaderAt, size int64) ([]StatementRow, error) {
	pf, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("read statements parquet: %w", err)
	}
	var recs []statementRecordNumbered
	if _, ok := pf.Schema().Lookup("statement_number"); ok {
		recs, err = parquet.Read[statementRecordNumbered](r, size)
	} else {
		var v3 []statementRecord
		v3, err = parquet.Read[statementRecord](r, size)
		recs = make([]statementRecordNumbered, len(v3))
		for i, x := range v3 {
			recs[i] = statementRecordNumbered{Month: x.Month, Status: x.Status, AgencyID: x.AgencyID, Currency: x.Currency,
				PurchaseCount: x.PurchaseCount, RefundCount: x.RefundCount, Gross: x.Gross, Refunds: x.Refunds, Net: x.Net,
				Commission: x.Commission, PriorPeriodAdjustments: x.PriorPeriodAdjustments, CommissionDue: x.CommissionDue,
				StatementRevision: x.StatementRevision}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read statements parquet: %w", err)
	}
	out := make([]StatementRow, len(recs))
	for i, rec := range recs {
		c, err := money.LookupCurrency(rec.Currency)
		if err != nil {
			return nil, fmt.Errorf("read statements parquet: row %d: %w", i, err)
		}
		row := StatementRow{Month: rec.Month, Status: rec.Status, AgencyID: rec.AgencyID, Currency: c,
			StatementRevision: rec.StatementRevision, StatementNumber: rec.StatementNumber}
		row.Line.Currency = c
		row.PurchaseCount, row.RefundCount = rec.PurchaseCount, rec.RefundCount
		for _, f := range []struct {
			dst *money.Total
			src [16]byte
		}{{&row.Gross, rec.Gross}, {&row.Refunds, rec.Refunds}, {&row.Net, rec.Net}, {&row.Commission, rec.Commission},
			{&row.PriorPeriodAdjustments, rec.PriorPeriodAdjustments}, {&row.CommissionDue, rec.CommissionDue}} {
			if *f.dst, err = c.FromDecimal38(f.src); err != nil {
				return nil, fmt.Errorf("read statements parquet: row %d: %w", i, err)
			}
		}
		out[i] = row
	}
	return out, nil
}

// statementCSVHeader: an agency's statement as one table. Every row
// carries the statement's number, month, status and revision; `line` says
// what the row is:
//
//	total       the month in one currency (prior_period_adjustments and commission_due set)
//	rate        the commission applied at one rate: date and date_to the run of days,
//	            commission_bps the rate (empty: unknown), net_amount the base, commission_amount
//	            what it earned
//	day         one day (in the statement's zone) in one currency
//	adjustment  a prior-period adjustment: the period, the revision it leads to, the reason, the
//	            differences, and that revision's digest (the audit chain of the line)
//	period      a period the statement covers: its revision and digest (the audit chain)
//
// The last column is period_digest: report.ContentDigest of the period
// revision. A statement with a LegacyChain (published before digests)
// has manifest_sha256 there instead, the period manifest's sha256, and
// none on its adjustment lines.
//
// A statement published before statement numbers (no Doc.Number and no
// rate lines) is written in the layout of then, statementCSVHeaderV3
// (no statement_number, date_to, commission_bps, no rate lines), so that a
// restore gives its bytes again; ReadStatementCSV reads both.
var statementCSVHeader = []string{
	"agency_id", "statement_number", "month", "status", "statement_revision", "line", "date", "date_to",
	"period_start", "period_end", "period_revision", "reason", "currency", "commission_bps", "purchase_count", "refund_count",
	"gross_amount", "refund_amount", "net_amount", "commission_amount",
	"prior_period_adjustments", "commission_due", "period_digest",
}

// statementCSVHeaderV3 is the layout before statement numbers.
var statementCSVHeaderV3 = []string{
	"agency_id", "month", "status", "statement_revision", "line", "date", "period_start", "period_end",
	"period_revision", "reason", "currency", "purchase_count", "refund_count",
	"gross_amount", "refund_amount", "net_amount", "commission_amount",
	"prior_period_adjustments", "commission_due", "period_digest",
}

// Last column names of the statement CSV (statementCSVHeader).
const (
	colDigest         = "period_digest"
	colManifestSHA256 = "manifest_sha256"
)

// csvRow is one row of a statement CSV by column name.
type csvRow map[string]string

// WriteStatementCSV writes s as an agency's statement-H.csv.
func WriteStatementCSV(w io.Writer, s *statement.Agency) error {
	header := statementCSVHeader
	if s.Doc.Number == "" && len(s.Rates) == 0 {
		header = statementCSVHeaderV3
	}
	header = slices.Clone(header)
	last := colDigest
	if s.LegacyChain {
		last = colManifestSHA256
		header[len(header)-1] = last
	}
	cw, release, err := newCSV(w, header)
	defer release()
	if err != nil {
		return fmt.Errorf("write statement csv: header: %w", err)
	}
	rec := make([]string, len(header))
	write := func(r csvRow) error {
		r["agency_id"], r["statement_number"], r["month"] = csvText(s.AgencyID), csvText(s.Doc.Number), s.Month
		r["status"], r["statement_revision"] = string(s.Status), strconv.Itoa(s.Revision)
		for i, col := range header {
			rec[i] = r[col]
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write statement csv: %w", err)
		}
		return nil
	}
	amounts := func(r csvRow, c money.Currency, t *statement.Totals) csvRow {
		r["currency"], r["purchase_count"], r["refund_count"] = csvText(c.Code), strconv.FormatInt(t.PurchaseCount, 10), strconv.FormatInt(t.RefundCount, 10)
		r["gross_amount"], r["refund_amount"], r["net_amount"], r["commission_amount"] = c.FormatTotal(t.Gross), c.FormatTotal(t.Refunds),
			c.FormatTotal(t.Net), c.FormatTotal(t.Commission)
		return r
	}
	for _, l := range s.Lines {
		r := amounts(csvRow{"line": "total"}, l.Currency, &l.Totals)
		r["prior_period_adjustments"], r["commission_due"] = l.Currency.FormatTotal(l.PriorPeriodAdjustments), l.Currency.FormatTotal(l.CommissionDue)
		if err := write(r); err != nil {
			return err
		}
	}
	for _, l := range s.Rates {
		r := csvRow{"line": "rate", "date": l.From, "date_to": l.To, "currency": csvText(l.Currency.Code),
			"net_amount": l.Currency.FormatTotal(l.Base), "commission_amount": l.Currency.FormatTotal(l.Commission)}
		if l.BPS != statement.UnknownBPS {
			r["commission_bps"] = strconv.Itoa(int(l.BPS))
		}
		if err := write(r); err != nil {
			return err
		}
	}
	for _, d := range s.Days {
		if err := write(amounts(csvRow{"line": "day", "date": d.Date}, d.Currency, &d.Totals)); err != nil {
			return err
		}
	}
	for _, a := range s.Adjustments {
		r := amounts(csvRow{"line": "adjustment", "period_start": csvTime(a.Period.Start), "period_end": csvTime(a.Period.End),
			"period_revision": strconv.Itoa(a.ToRevision), "reason": a.Reason}, a.Currency, &a.Totals)
		if !s.LegacyChain {
			r[last] = a.Digest
		}
		if err := write(r); err != nil {
			return err
		}
	}
	for _, p := range s.Periods {
		r := csvRow{"line": "period", "period_start": csvTime(p.Period.Start), "period_end": csvTime(p.Period.End),
			"period_revision": strconv.Itoa(p.Revision), last: p.Digest}
		if s.LegacyChain {
			r[last] = p.ManifestSHA256
		}
		if err := write(r); err != nil {
			return err
		}
	}
	return flushCSV(cw, "statement")
}

// NewFile writes one whole object with enc into a temporary file in dir
// and names it prefix+base-H.ext by its content hash.
func NewFile(dir, prefix, base, ext, contentType string, rows int64, enc func(io.Writer) error) (File, error) {
	return encodeFile(dir, 0, prefix, base, ext, contentType, rows, enc)
}

// NewSmallFile is NewFile for an object usually small: held in memory
// (File.Data) up to SmallFileBytes, in a temporary file in dir past that.
// Discard gives its memory back.
func NewSmallFile(dir, prefix, base, ext, contentType string, rows int64, enc func(io.Writer) error) (File, error) {
	return encodeFile(dir, SmallFileBytes, prefix, base, ext, contentType, rows, enc)
}

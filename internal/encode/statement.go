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

// statementRecord is one row of statements/month=M/statements-H.parquet
// and of an agency's statement-H.parquet: one agency's month in one
// currency. Field order is column order.
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
// (sorted by agency id, each's lines by currency) to w.
func WriteStatementsParquet(w io.Writer, stmts []*statement.Agency) error {
	var recs []statementRecord
	for _, s := range stmts {
		for _, l := range s.Lines {
			d := decimals{cur: l.Currency, what: func() string {
				return fmt.Sprintf("agency %q currency %s", s.AgencyID, l.Currency.Code)
			}}
			recs = append(recs, statementRecord{
				Month: s.Month, Status: string(s.Status), AgencyID: s.AgencyID, Currency: l.Currency.Code,
				PurchaseCount: l.PurchaseCount, RefundCount: l.RefundCount,
				Gross: d.d38("gross_amount", l.Gross), Refunds: d.d38("refund_amount", l.Refunds),
				Net: d.d38("net_amount", l.Net), Commission: d.d38("commission_amount", l.Commission),
				PriorPeriodAdjustments: d.d38("prior_period_adjustments", l.PriorPeriodAdjustments),
				CommissionDue:          d.d38("commission_due", l.CommissionDue),
				StatementRevision:      int32(s.Revision),
			})
			if d.err != nil {
				return fmt.Errorf("write statements parquet: %w", d.err)
			}
		}
	}
	return writeAll(w, "statements", recs, parquetOptions())
}

// StatementRow is one row of a statements Parquet file, read back.
type StatementRow struct {
	Month, Status, AgencyID string
	Currency                money.Currency
	statement.Line
	StatementRevision int32
}

// ReadStatementsParquet reads a statements Parquet file.
func ReadStatementsParquet(r io.ReaderAt, size int64) ([]StatementRow, error) {
	recs, err := parquet.Read[statementRecord](r, size)
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
			StatementRevision: rec.StatementRevision}
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
// carries the statement's month, status and revision; `line` says what
// the row is:
//
//	total       the month in one currency (prior_period_adjustments and commission_due set)
//	day         one day (in the statement's zone) in one currency
//	adjustment  a prior-period adjustment: the period, the revision it leads to, the reason, the
//	            differences, and that revision's digest (the audit chain of the line)
//	period      a period the statement covers: its revision and digest (the audit chain)
//
// The last column is period_digest: report.ContentDigest of the period
// revision. A statement with a LegacyChain (published before digests)
// has manifest_sha256 there instead, the period manifest's sha256, and
// none on its adjustment lines.
var statementCSVHeader = []string{
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

// WriteStatementCSV writes s as an agency's statement-H.csv.
func WriteStatementCSV(w io.Writer, s *statement.Agency) error {
	header := statementCSVHeader
	if s.LegacyChain {
		header = append(slices.Clone(header[:len(header)-1]), colManifestSHA256)
	}
	cw, err := newCSV(w, header)
	if err != nil {
		return fmt.Errorf("write statement csv: header: %w", err)
	}
	head := []string{csvText(s.AgencyID), s.Month, string(s.Status), strconv.Itoa(s.Revision)}
	amounts := func(c money.Currency, t *statement.Totals) []string {
		return []string{csvText(c.Code), strconv.FormatInt(t.PurchaseCount, 10), strconv.FormatInt(t.RefundCount, 10),
			c.FormatTotal(t.Gross), c.FormatTotal(t.Refunds), c.FormatTotal(t.Net), c.FormatTotal(t.Commission)}
	}
	row := func(cells ...[]string) error {
		var rec []string
		for _, c := range cells {
			rec = append(rec, c...)
		}
		return cw.Write(rec)
	}
	none := func(n int) []string { return make([]string, n) }
	for _, l := range s.Lines {
		if err := row(head, []string{"total"}, none(5), amounts(l.Currency, &l.Totals),
			[]string{l.Currency.FormatTotal(l.PriorPeriodAdjustments), l.Currency.FormatTotal(l.CommissionDue), ""}); err != nil {
			return fmt.Errorf("write statement csv: %w", err)
		}
	}
	for _, d := range s.Days {
		if err := row(head, []string{"day", d.Date}, none(4), amounts(d.Currency, &d.Totals), none(3)); err != nil {
			return fmt.Errorf("write statement csv: %w", err)
		}
	}
	for _, a := range s.Adjustments {
		digest := a.Digest
		if s.LegacyChain {
			digest = ""
		}
		if err := row(head, []string{"adjustment", "", csvTime(a.Period.Start), csvTime(a.Period.End), strconv.Itoa(a.ToRevision), a.Reason},
			amounts(a.Currency, &a.Totals), none(2), []string{digest}); err != nil {
			return fmt.Errorf("write statement csv: %w", err)
		}
	}
	for _, p := range s.Periods {
		digest := p.Digest
		if s.LegacyChain {
			digest = p.ManifestSHA256
		}
		if err := row(head, []string{"period", "", csvTime(p.Period.Start), csvTime(p.Period.End), strconv.Itoa(p.Revision), ""},
			none(7), none(2), []string{digest}); err != nil {
			return fmt.Errorf("write statement csv: %w", err)
		}
	}
	return flushCSV(cw, "statement")
}

// NewFile writes one whole object with enc into a temporary file in dir
// and names it prefix+base-H.ext by its content hash.
func NewFile(dir, prefix, base, ext, contentType string, rows int64, enc func(io.Writer) error) (File, error) {
	return encodeFile(dir, 0, prefix, base, ext, contentType, rows, enc)
}

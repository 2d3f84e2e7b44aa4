package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// summaryCSVHeader is summary.csv's header: the summary.parquet columns,
// in the same order.
var summaryCSVHeader = []string{
	"period_start", "period_end", "agency_id", "currency",
	"purchase_count", "refund_count",
	"gross_amount", "refund_amount", "net_amount", "commission_amount",
}

// WriteSummaryCSV writes rows, already sorted by the caller, as
// summary.csv to w: RFC 4180 (CRLF line ends, fields quoted only when
// needed), a header row, timestamps RFC 3339 in UTC, amounts in the
// currency's own digits ("19.99", "1500" for JPY, "1.500" for BHD,
// "-5.00" for a negative net).
//
// A text cell that a spreadsheet would run as a formula (agency_id or
// currency starting with = + - @ TAB or CR) is prefixed with a single
// quote ('), as OWASP recommends for CSV injection. Numbers are never
// altered: a negative amount stays "-5.00" so it is still a number.
func WriteSummaryCSV(w io.Writer, rows []SummaryRow) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(summaryCSVHeader); err != nil {
		return fmt.Errorf("write summary csv: header: %w", err)
	}
	rec := make([]string, len(summaryCSVHeader))
	for _, r := range rows {
		rec = append(rec[:0],
			csvTime(r.PeriodStart),
			csvTime(r.PeriodEnd),
			csvText(r.AgencyID),
			csvText(r.Currency.Code),
			strconv.FormatInt(r.PurchaseCount, 10),
			strconv.FormatInt(r.RefundCount, 10),
			r.Currency.Format(r.Gross),
			r.Currency.Format(r.Refunds),
			r.Currency.Format(r.Net),
			r.Currency.Format(r.Commission),
		)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write summary csv: agency %q currency %s: %w", r.AgencyID, r.Currency.Code, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write summary csv: %w", err)
	}
	return nil
}

// csvTime formats t as RFC 3339 in UTC, with fractional seconds only when
// t has them ("2024-05-01T00:00:00Z").
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

package encode

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// ReadStatementCSV reads back an agency's statement-H.csv (written by
// WriteStatementCSV for agency, in either layout): every line it prints
// and its statement number. What the CSV does not hold is left unset for
// the caller to fill from the month manifest: Job, Zone, ClosesAt, the
// rest of Doc, each adjustment's FromRevision and Month, and each
// period's ManifestKey. LegacyChain is set when the file's last column is
// manifest_sha256 (the period rows then fill ManifestSHA256).
func ReadStatementCSV(r io.Reader, agency string) (*statement.Agency, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read statement csv: %w", err)
	}
	var header []string
	if len(recs) > 0 {
		for _, h := range [][]string{statementCSVHeader, statementCSVHeaderV3} {
			last := len(h) - 1
			if len(recs[0]) == len(h) && slices.Equal(recs[0][:last], h[:last]) &&
				(recs[0][last] == colDigest || recs[0][last] == colManifestSHA256) {
				header = recs[0]
			}
		}
	}
	if header == nil {
		return nil, fmt.Errorf("read statement csv: not a statement file of this layout")
	}
	s := &statement.Agency{AgencyID: agency, LegacyChain: header[len(header)-1] == colManifestSHA256}
	for i, rec := range recs[1:] {
		if len(rec) != len(header) {
			return nil, fmt.Errorf("read statement csv: row %d: %d cells, want %d", i+1, len(rec), len(header))
		}
		row := csvRow{}
		for j, col := range header {
			row[col] = rec[j]
		}
		row["digest"] = rec[len(rec)-1]
		if err := readStatementRow(s, row, i == 0); err != nil {
			return nil, fmt.Errorf("read statement csv: row %d: %w", i+1, err)
		}
	}
	if len(recs) == 1 {
		return nil, fmt.Errorf("read statement csv: no rows")
	}
	return s, nil
}

// readStatementRow adds one row of a statement CSV to s.
func readStatementRow(s *statement.Agency, rec csvRow, first bool) error {
	if rec["agency_id"] != csvText(s.AgencyID) {
		return fmt.Errorf("agency_id %q in agency %q's statement", rec["agency_id"], s.AgencyID)
	}
	rev, err := strconv.Atoi(rec["statement_revision"])
	if err != nil {
		return fmt.Errorf("statement_revision: %w", err)
	}
	number := strings.TrimPrefix(rec["statement_number"], "'")
	if first {
		s.Month, s.Status, s.Revision, s.Doc.Number = rec["month"], statement.Status(rec["status"]), rev, number
	} else if rec["month"] != s.Month || statement.Status(rec["status"]) != s.Status || rev != s.Revision || number != s.Doc.Number {
		return fmt.Errorf("statement number, month, status or revision %s %s %s %s differ from the first row's",
			number, rec["month"], rec["status"], rec["statement_revision"])
	}
	period := func() (report.Period, int, error) {
		var p report.Period
		for _, f := range [...]struct {
			dst  *time.Time
			cell string
		}{{&p.Start, rec["period_start"]}, {&p.End, rec["period_end"]}} {
			t, err := time.Parse(time.RFC3339Nano, f.cell)
			if err != nil {
				return p, 0, err
			}
			*f.dst = t.UTC()
		}
		r, err := strconv.Atoi(rec["period_revision"])
		return p, r, err
	}
	totals := func() (money.Currency, statement.Totals, error) {
		var t statement.Totals
		c, err := money.LookupCurrency(rec["currency"])
		if err != nil {
			return c, t, err
		}
		for _, f := range [...]struct {
			dst  *int64
			cell string
		}{{&t.PurchaseCount, rec["purchase_count"]}, {&t.RefundCount, rec["refund_count"]}} {
			if *f.dst, err = strconv.ParseInt(f.cell, 10, 64); err != nil {
				return c, t, err
			}
		}
		for _, f := range [...]struct {
			dst  *money.Total
			cell string
		}{{&t.Gross, rec["gross_amount"]}, {&t.Refunds, rec["refund_amount"]}, {&t.Net, rec["net_amount"]}, {&t.Commission, rec["commission_amount"]}} {
			if *f.dst, err = money.ParseTotal(f.cell, c); err != nil {
				return c, t, err
			}
		}
		return c, t, nil
	}
	switch rec["line"] {
	case "total":
		c, t, err := totals()
		if err != nil {
			return err
		}
		l := statement.Line{Currency: c, Totals: t}
		if l.PriorPeriodAdjustments, err = money.ParseTotal(rec["prior_period_adjustments"], c); err != nil {
			return err
		}
		if l.CommissionDue, err = money.ParseTotal(rec["commission_due"], c); err != nil {
			return err
		}
		s.Lines = append(s.Lines, l)
	case "rate":
		c, err := money.LookupCurrency(rec["currency"])
		if err != nil {
			return err
		}
		l := statement.RateLine{Currency: c, BPS: statement.UnknownBPS, From: rec["date"], To: rec["date_to"]}
		if rec["commission_bps"] != "" {
			bps, err := strconv.ParseInt(rec["commission_bps"], 10, 32)
			if err != nil {
				return fmt.Errorf("commission_bps: %w", err)
			}
			l.BPS = int32(bps)
		}
		if l.Base, err = money.ParseTotal(rec["net_amount"], c); err != nil {
			return err
		}
		if l.Commission, err = money.ParseTotal(rec["commission_amount"], c); err != nil {
			return err
		}
		s.Rates = append(s.Rates, l)
	case "day":
		c, t, err := totals()
		if err != nil {
			return err
		}
		s.Days = append(s.Days, statement.Day{Date: rec["date"], Currency: c, Totals: t})
	case "adjustment":
		p, r, err := period()
		if err != nil {
			return err
		}
		c, t, err := totals()
		if err != nil {
			return err
		}
		s.Adjustments = append(s.Adjustments, statement.Adjustment{Period: p, ToRevision: r, Reason: rec["reason"], Digest: rec["digest"],
			Currency: c, Totals: t})
	case "period":
		p, r, err := period()
		if err != nil {
			return err
		}
		ref := statement.PeriodRef{Period: p, Revision: r, Digest: rec["digest"]}
		if s.LegacyChain {
			ref.Digest, ref.ManifestSHA256 = "", rec["digest"]
		}
		s.Periods = append(s.Periods, ref)
	default:
		return fmt.Errorf("line %q", rec["line"])
	}
	return nil
}

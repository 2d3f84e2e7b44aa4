package encode

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// ReadStatementCSV reads back an agency's statement-H.csv (written by
// WriteStatementCSV for agency): every line it prints. What the CSV does not
// hold is left unset for the caller to fill from the month manifest: Job,
// Zone, ClosesAt, each adjustment's FromRevision and Month, and each
// period's ManifestKey. LegacyChain is set when the file's last column is
// manifest_sha256 (the period rows then fill ManifestSHA256).
func ReadStatementCSV(r io.Reader, agency string) (*statement.Agency, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(statementCSVHeader)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read statement csv: %w", err)
	}
	last := len(statementCSVHeader) - 1
	if len(recs) == 0 || !slices.Equal(recs[0][:last], statementCSVHeader[:last]) ||
		recs[0][last] != colDigest && recs[0][last] != colManifestSHA256 {
		return nil, fmt.Errorf("read statement csv: not a statement file of this layout")
	}
	s := &statement.Agency{AgencyID: agency, LegacyChain: recs[0][last] == colManifestSHA256}
	for i, rec := range recs[1:] {
		if err := readStatementRow(s, rec); err != nil {
			return nil, fmt.Errorf("read statement csv: row %d: %w", i+1, err)
		}
	}
	if len(recs) == 1 {
		return nil, fmt.Errorf("read statement csv: no rows")
	}
	return s, nil
}

// readStatementRow adds one row of a statement CSV to s.
func readStatementRow(s *statement.Agency, rec []string) error {
	if rec[0] != csvText(s.AgencyID) {
		return fmt.Errorf("agency_id %q in agency %q's statement", rec[0], s.AgencyID)
	}
	rev, err := strconv.Atoi(rec[3])
	if err != nil {
		return fmt.Errorf("statement_revision: %w", err)
	}
	if s.Month == "" {
		s.Month, s.Status, s.Revision = rec[1], statement.Status(rec[2]), rev
	} else if rec[1] != s.Month || statement.Status(rec[2]) != s.Status || rev != s.Revision {
		return fmt.Errorf("month, status or revision %s %s %s differ from the first row's", rec[1], rec[2], rec[3])
	}
	period := func() (report.Period, int, error) {
		var p report.Period
		for _, f := range [...]struct {
			dst  *time.Time
			cell string
		}{{&p.Start, rec[6]}, {&p.End, rec[7]}} {
			t, err := time.Parse(time.RFC3339Nano, f.cell)
			if err != nil {
				return p, 0, err
			}
			*f.dst = t.UTC()
		}
		r, err := strconv.Atoi(rec[8])
		return p, r, err
	}
	totals := func() (money.Currency, statement.Totals, error) {
		var t statement.Totals
		c, err := money.LookupCurrency(rec[10])
		if err != nil {
			return c, t, err
		}
		for _, f := range [...]struct {
			dst  *int64
			cell string
		}{{&t.PurchaseCount, rec[11]}, {&t.RefundCount, rec[12]}} {
			if *f.dst, err = strconv.ParseInt(f.cell, 10, 64); err != nil {
				return c, t, err
			}
		}
		for _, f := range [...]struct {
			dst  *money.Total
			cell string
		}{{&t.Gross, rec[13]}, {&t.Refunds, rec[14]}, {&t.Net, rec[15]}, {&t.Commission, rec[16]}} {
			if *f.dst, err = money.ParseTotal(f.cell, c); err != nil {
				return c, t, err
			}
		}
		return c, t, nil
	}
	switch rec[4] {
	case "total":
		c, t, err := totals()
		if err != nil {
			return err
		}
		l := statement.Line{Currency: c, Totals: t}
		if l.PriorPeriodAdjustments, err = money.ParseTotal(rec[17], c); err != nil {
			return err
		}
		if l.CommissionDue, err = money.ParseTotal(rec[18], c); err != nil {
			return err
		}
		s.Lines = append(s.Lines, l)
	case "day":
		c, t, err := totals()
		if err != nil {
			return err
		}
		s.Days = append(s.Days, statement.Day{Date: rec[5], Currency: c, Totals: t})
	case "adjustment":
		p, r, err := period()
		if err != nil {
			return err
		}
		c, t, err := totals()
		if err != nil {
			return err
		}
		s.Adjustments = append(s.Adjustments, statement.Adjustment{Period: p, ToRevision: r, Reason: rec[9], Digest: rec[19],
			Currency: c, Totals: t})
	case "period":
		p, r, err := period()
		if err != nil {
			return err
		}
		ref := statement.PeriodRef{Period: p, Revision: r, Digest: rec[19]}
		if s.LegacyChain {
			ref.Digest, ref.ManifestSHA256 = "", rec[19]
		}
		s.Periods = append(s.Periods, ref)
	default:
		return fmt.Errorf("line %q", rec[4])
	}
	return nil
}

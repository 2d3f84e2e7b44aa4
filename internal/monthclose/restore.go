package monthclose

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// How a final month's lost or corrupt objects are restored (SPEC section
// 7: a final month can always be restored from what it delivered, whatever
// happened to its periods since). Stated and enforced here only.
//
// The month's own intact objects (each checked against the sha256 its
// manifest lists) are read back: an agency's statement CSV holds every
// line its PDF and Parquet print, and the month manifest the rest (job,
// zone, each adjustment's from-revision and month), so the agency's
// statement is re-made from them; an agency without an intact CSV has its
// totals in its statement Parquet or in the month's statements Parquet.
// From those the lost objects are written again: an agency's PDF, CSV and
// Parquet, the statements Parquet, the month's adjustments file. When the
// month's periods are all still at the revisions its manifest names (none
// restated since), a rebuild from them is a second source. Every object is
// uploaded only when its bytes have the sha256 the manifest lists; the
// others are named as lost. The periods' current revisions are never used
// once one of them was restated.

// restore uploads again the objects of final month cur that are missing
// or corrupt and that its own delivered objects (or the period revisions
// it names) give with the same bytes; lost are the keys of those that
// are missing or corrupt and that nothing gives.
func (c *Closer) restore(ctx context.Context, set *monthSet, rec Record, cur *current) (restored int, lost []string, err error) {
	man := cur.m
	c = c.as(man)
	broken := map[string]report.FileInfo{}
	for _, f := range man.Files {
		if !c.intact(ctx, f) {
			broken[f.Key] = f
		}
	}
	if len(broken) == 0 {
		return 0, nil, nil
	}
	var files []encode.File
	defer func() { removeFiles(files) }()
	done := map[string]bool{}
	take := func(fs []encode.File) {
		for _, f := range fs {
			if info, ok := broken[f.Key]; ok && !done[f.Key] && info.SHA256 == f.SHA256 && info.Bytes == f.Bytes {
				done[f.Key] = true
				files = append(files, f)
				continue
			}
			f.Discard()
		}
	}
	fs, err := c.fromDelivered(ctx, man, broken)
	take(fs)
	if err != nil {
		return 0, nil, err
	}
	if len(done) < len(broken) && c.periodsAsNamed(ctx, man, rec) {
		w := &monthWork{changed: true, final: true, reason: man.Reason, legacyChain: man.LegacyChain(), record: true}
		bt, err := c.build(ctx, set, rec, man.Month, w, man, man.StatementRevision)
		if err == nil {
			var fs []encode.File
			fs, err = c.encode(man.Month, bt, nil)
			take(fs)
		}
		if err != nil {
			// A second source only (its adjustments file lost, say):
			// what it would give is named as lost.
			c.Log.Warn("a rebuild of a final month from the period revisions it names failed", "month", man.Month, "err", err)
		}
	}
	for _, f := range man.Files {
		if _, ok := broken[f.Key]; ok && !done[f.Key] {
			lost = append(lost, f.Key)
		}
	}
	return len(files), lost, c.upload(ctx, files)
}

// periodsAsNamed reports whether every period month man lists is still at
// the revision it names, and the month has no other period.
func (c *Closer) periodsAsNamed(ctx context.Context, man *Manifest, rec Record) bool {
	to := man.MonthEnd
	if rec.Grid.Checkpoint.Before(to) {
		to = rec.Grid.Checkpoint
	}
	if len(rec.Grid.Between(man.MonthStart, to)) != len(man.Periods) {
		return false
	}
	for _, pe := range man.Periods {
		pcur, err := c.Periods.Current(ctx, report.Period{Start: pe.Start.UTC(), End: pe.End.UTC()})
		if err != nil || !pe.Is(pcur.Manifest, pcur.Raw) {
			return false
		}
	}
	return true
}

// fromDelivered writes what final month man's intact objects give of its
// broken ones (see the comment above restore).
func (c *Closer) fromDelivered(ctx context.Context, man *Manifest, broken map[string]report.FileInfo) ([]encode.File, error) {
	ids, err := c.agencyIDs(ctx, man, broken)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	// The documents, from the month's record (document.go).
	var logo []byte
	entries := map[string]*AgencyEntry{}
	if man.Document != nil {
		if logo, err = c.recordedLogo(ctx, man); err != nil {
			return nil, err
		}
		for i := range man.Agencies {
			entries[man.Agencies[i].AgencyID] = &man.Agencies[i]
		}
	}
	var out []encode.File
	if info, ok := logoInfo(man); ok && logo != nil {
		if _, bad := broken[info.Key]; bad {
			fs, err := c.logoFile(man.Month, logo)
			out = append(out, fs...)
			if err != nil {
				return out, err
			}
		}
	}
	byID := map[string]*statement.Agency{} // from the CSV: every line
	lines := map[string][]encode.StatementRow{}
	var statementsRows []encode.StatementRow
	haveStatements := false
	for _, f := range man.Files {
		if _, bad := broken[f.Key]; bad || !strings.HasPrefix(f.Key, report.StatementsPrefix(man.Month)) {
			continue
		}
		if statementsRows, err = c.readStatementRows(ctx, f); err != nil {
			return out, err
		}
		haveStatements = true
	}
	for _, id := range ids {
		for _, f := range man.Files {
			if _, bad := broken[f.Key]; bad || !strings.HasPrefix(f.Key, report.AgencyMonthPrefix(id, man.Month)) {
				continue
			}
			switch {
			case strings.HasSuffix(f.Key, ".csv"):
				s, err := c.readStatementCSV(ctx, man, f, id)
				if err != nil {
					return out, err
				}
				if man.Document != nil {
					docFromRecord(s, man, entries[id], logo, nil)
				}
				byID[id] = s
			case strings.HasSuffix(f.Key, ".parquet"):
				if lines[id], err = c.readStatementRows(ctx, f); err != nil {
					return out, err
				}
			}
		}
		if _, ok := lines[id]; !ok && haveStatements {
			for _, r := range statementsRows {
				if r.AgencyID == id {
					lines[id] = append(lines[id], r)
				}
			}
		}
	}
	// Each agency's files, from its CSV.
	for _, id := range ids {
		s := byID[id]
		if s == nil || !anyBroken(broken, report.AgencyMonthPrefix(id, man.Month)) {
			continue
		}
		fs, err := c.agencyFiles(s, false)
		out = append(out, fs...)
		if err != nil {
			return out, err
		}
	}
	// Each agency's totals: from its CSV, or its Parquet, or the
	// statements Parquet.
	totals := make([]*statement.Agency, 0, len(ids))
	for _, id := range ids {
		if s := byID[id]; s != nil {
			totals = append(totals, s)
			continue
		}
		rows, ok := lines[id]
		if !ok {
			return out, nil // an agency of which nothing is left: the rest is lost
		}
		s := &statement.Agency{AgencyID: id, Month: man.Month, Status: statement.Status(man.Status), Revision: man.StatementRevision}
		for _, r := range rows {
			s.Revision, s.Doc.Number = int(r.StatementRevision), r.StatementNumber
			s.Lines = append(s.Lines, r.Line)
		}
		totals = append(totals, s)
		if c.Formats.Parquet && anyBroken(broken, report.AgencyMonthPrefix(id, man.Month)) {
			f, err := encode.NewFile(c.Dir, report.AgencyMonthPrefix(id, man.Month), statementBase, "parquet", encode.TypeParquet,
				int64(len(s.Lines)), func(w io.Writer) error { return encode.WriteStatementsParquet(w, []*statement.Agency{s}) })
			if err != nil {
				return out, err
			}
			out = append(out, f)
		}
	}
	f, err := encode.NewFile(c.Dir, report.StatementsPrefix(man.Month), statementsBase, "parquet", encode.TypeParquet, rows(totals),
		func(w io.Writer) error { return encode.WriteStatementsParquet(w, totals) })
	if err != nil {
		return out, fmt.Errorf("encode the statements of %s: %w", man.Month, err)
	}
	out = append(out, f)
	// The month's adjustments file, from every agency's adjustment lines.
	if len(man.Adjustments) > 0 && len(byID) == len(ids) {
		var adjRows []report.AdjustmentRow
		for _, e := range man.Adjustments {
			var mine []report.AdjustmentRow
			for _, id := range ids {
				for _, a := range byID[id].Adjustments {
					if a.Period.Start.Equal(e.PeriodStart) && a.ToRevision == e.ToRevision {
						mine = append(mine, report.AdjustmentRow{Revision: int32(a.ToRevision), SummaryRow: report.SummaryRow{
							PeriodStart: a.Period.Start, PeriodEnd: a.Period.End, AgencyID: id, Currency: a.Currency,
							PurchaseCount: a.PurchaseCount, RefundCount: a.RefundCount, Gross: a.Gross, Refunds: a.Refunds,
							Net: a.Net, Commission: a.Commission}})
					}
				}
			}
			slices.SortStableFunc(mine, func(x, y report.AdjustmentRow) int {
				return cmp.Or(cmp.Compare(x.AgencyID, y.AgencyID), cmp.Compare(x.Currency.Code, y.Currency.Code))
			})
			adjRows = append(adjRows, mine...)
		}
		f, err := encode.NewFile(c.Dir, report.MonthManifestPrefix(man.Month), adjustmentsBase, "parquet", encode.TypeParquet,
			int64(len(adjRows)), func(w io.Writer) error { return encode.WriteAdjustmentsParquet(w, adjRows) })
		if err != nil {
			return out, fmt.Errorf("encode the adjustments of %s: %w", man.Month, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// anyBroken reports whether a key of broken starts with prefix.
func anyBroken(broken map[string]report.FileInfo, prefix string) bool {
	for k := range broken {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// agencyIDs returns month man's agencies, sorted: its agency entries, or
// (a manifest written before it listed them) its agency folders.
func (c *Closer) agencyIDs(ctx context.Context, man *Manifest, broken map[string]report.FileInfo) ([]string, error) {
	var ids []string
	for _, e := range man.Agencies {
		ids = append(ids, e.AgencyID)
	}
	if len(ids) == 0 {
		for prefix := range agencyFilesOf(man) {
			id, ok := report.AgencyOfMonthPrefix(prefix)
			if !ok {
				return nil, fmt.Errorf("month %s lists %s, which is no agency folder", man.Month, prefix)
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// readStatementRows reads an intact statements Parquet file of the month.
func (c *Closer) readStatementRows(ctx context.Context, f report.FileInfo) ([]encode.StatementRow, error) {
	file, n, err := c.Periods.Fetch(ctx, f, c.Dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Key, err)
	}
	defer func() { file.Close(); os.Remove(file.Name()) }()
	rows, err := encode.ReadStatementsParquet(file, n)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Key, err)
	}
	return rows, nil
}

// readStatementCSV reads an agency's intact statement CSV back into its
// statement, with what the CSV does not hold taken from man.
func (c *Closer) readStatementCSV(ctx context.Context, man *Manifest, f report.FileInfo, id string) (*statement.Agency, error) {
	file, n, err := c.Periods.Fetch(ctx, f, c.Dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Key, err)
	}
	defer func() { file.Close(); os.Remove(file.Name()) }()
	s, err := encode.ReadStatementCSV(io.NewSectionReader(file, 0, n), id)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Key, err)
	}
	s.Job, s.Zone = man.Job, man.Timezone
	if !man.Final() {
		s.ClosesAt = man.ClosesAt.Format(time.RFC3339)
	}
	for i := range s.Periods {
		s.Periods[i].ManifestKey = report.ManifestKey(s.Periods[i].Period)
	}
	for i := range s.Adjustments {
		a := &s.Adjustments[i]
		for _, e := range man.Adjustments {
			if e.PeriodStart.Equal(a.Period.Start) && e.ToRevision == a.ToRevision {
				a.FromRevision, a.Month = e.FromRevision, e.PeriodMonth
			}
		}
	}
	return s, nil
}

// intact reports whether the object info describes is in the sink with
// its size and SHA-256.
func (c *Closer) intact(ctx context.Context, info report.FileInfo) bool {
	file, _, err := c.Periods.Fetch(ctx, info, c.Dir)
	if err != nil {
		return false
	}
	file.Close()
	removeFiles([]encode.File{{Path: file.Name()}})
	return true
}

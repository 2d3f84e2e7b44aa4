package monthclose

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// adjustmentsBase names a month's adjustments file,
// manifests/month=M/adjustments-H.parquet: the rows of the prior-period
// adjustments booked in the month (the adjustments schema; period_start
// and revision say which restatement each row comes from).
const adjustmentsBase = "adjustments"

// rebuild builds month m's statements from the latest revision of each of
// its periods and the adjustments booked in it, and publishes them when
// they differ from what the sink holds.
func (c *Closer) rebuild(ctx context.Context, months *monthSet, rec Record, m string, w *monthWork) (MonthResult, error) {
	mr := MonthResult{Month: m}
	cur, err := months.read(ctx, c, m)
	if err != nil {
		return mr, err
	}
	var prev *Manifest
	if cur != nil {
		prev = cur.m
	}
	if prev != nil && prev.Final() {
		if w.changed || w.final || len(w.adjust) > 0 {
			return mr, fmt.Errorf("%s is final: a final statement never changes", m)
		}
		return mr, c.finishCleanup(ctx, cur)
	}
	if !w.changed && !w.final && len(w.adjust) == 0 && !w.force {
		return mr, c.finishCleanup(ctx, cur)
	}
	revision := 1
	if prev != nil {
		revision = prev.StatementRevision + 1
	}
	t0 := time.Now()
	bt, err := c.build(ctx, months, rec, m, w, prev, revision)
	if err != nil {
		return mr, err
	}
	man := bt.man
	mr.Status, mr.Agencies, mr.Booked = man.Status, len(bt.ids), bt.booked
	if prev != nil && !w.force && c.unchanged(prev, man) {
		mr.Revision = prev.StatementRevision
		return mr, c.finishCleanup(ctx, cur)
	}
	man.StatementRevision = revision
	if prev != nil {
		prev.release(bt.kept) // what is left of it is read for its keys
	}
	t1 := time.Now()
	up := c.newAgencyPuts(ctx, m, cur.hasFile)
	files, agency, err := c.encodeStream(m, bt, bt.kept, up.add)
	bt.gen = nil // the builder is no longer needed
	defer removeFiles(files)
	_, uerr := up.finish()
	if err = cmp.Or(err, uerr); err != nil {
		up.abort(ctx)
		return mr, err
	}
	man.Files = make([]report.FileInfo, 0, len(files)+len(agency)+len(bt.kept)*len(man.AgencyFiles))
	for _, f := range files {
		man.Files = append(man.Files, f.Info())
	}
	man.Files = append(man.Files, agency...)
	for _, fs := range bt.kept {
		man.Files = append(man.Files, fs...)
	}
	bt.kept = nil
	slices.SortFunc(man.Files, func(x, y report.FileInfo) int { return cmp.Compare(x.Key, y.Key) })
	t2 := time.Now()
	uploaded, err := c.publish(ctx, cur, man, files, up)
	if err != nil {
		return mr, err
	}
	// Where a slow close's time went, without a profiler: the statements
	// made and recorded (build), rendered and the agency files uploaded
	// (render, overlapped), the month's files, manifest and cleanup.
	c.Log.Debug("statement stages", "month", m, "build_ms", t1.Sub(t0).Milliseconds(), "render_ms", t2.Sub(t1).Milliseconds(),
		"publish_ms", time.Since(t2).Milliseconds(), "agency_intents", len(up.intents))
	mr.Revision, mr.Reason, mr.Uploaded, mr.Published = man.StatementRevision, man.Reason, uploaded, true
	mr.Manifest = report.MonthManifestKey(m)
	c.Log.Info("statements published", "month", m, "status", man.Status, "statement_revision", man.StatementRevision,
		"reason", man.Reason, "agencies", len(bt.ids), "uploaded", uploaded)
	return mr, nil
}

// formats are the agency files written: a PDF only with a renderer.
func (c *Closer) formats() Formats {
	f := c.Formats
	f.PDF = f.PDF && c.RenderPDF != nil
	return f
}

func removeFiles(files []encode.File) {
	for _, f := range files {
		f.Discard()
	}
}

// built is a month's statements built from the record, not encoded yet:
// what the manifest lists of them, and how to make each one again
// (stream.go).
type built struct {
	man     *Manifest // Files unset
	adjRows []report.AdjustmentRow
	booked  int // new adjustments booked
	// kept are the files of the agencies whose statements did not change
	// since prev, by agency folder (report.AgencyMonthPrefix): published
	// again as they are (agencies.go).
	kept map[string][]report.FileInfo
	stream
}

// build builds month m's statements at statement revision revision: its
// own periods up to the checkpoint (their latest revisions), the
// adjustments prev booked, and the new ones of w.adjust.
func (c *Closer) build(ctx context.Context, months *monthSet, rec Record, m string, w *monthWork, prev *Manifest, revision int) (*built, error) {
	start, end, err := statement.Bounds(m, c.Loc)
	if err != nil {
		return nil, err
	}
	b := statement.NewBuilder(c.Job, m, c.Loc)
	man := &Manifest{Format: Format, Job: c.Job, Month: m, Timezone: c.Loc.String(), MonthStart: start, MonthEnd: end,
		Status: string(statement.Draft), Reason: ReasonUpdate, ClosesAt: end.Add(c.CloseAfter), AgencyFiles: c.formats().names()}
	if w.final {
		man.Status, man.Reason = string(statement.Final), w.reason
	}
	to := end
	if rec.Grid.Checkpoint.Before(to) {
		to = rec.Grid.Checkpoint
	}
	// Rate lines and documents, but for a month published before them
	// that is re-made as it was.
	docs := !w.record || prev != nil && prev.Document != nil
	if err := c.addPeriods(ctx, b, man, rec.Grid.Between(start, to), docs); err != nil {
		return nil, err
	}
	bt := &built{man: man}
	if prev != nil {
		if bt.adjRows, err = c.carryAdjustments(ctx, b, man, prev, w.legacyChain); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(w.adjust, func(x, y report.Period) int { return x.Start.Compare(y.Start) })
	for _, p := range w.adjust {
		rows, booked, err := c.bookAdjustment(ctx, months, b, man, p, m)
		if err != nil {
			return nil, err
		}
		bt.adjRows = append(bt.adjRows, rows...)
		bt.booked += booked
	}
	closesAt := man.ClosesAt.Format(time.RFC3339)
	if w.final {
		closesAt = ""
	}
	if err := c.statements(ctx, bt, b, w, prev, docs, revision, closesAt); err != nil {
		return nil, err
	}
	return bt, nil
}

// unchanged reports whether man (built, revision unset) publishes what prev
// does: same periods, adjustments, status and totals, and the same
// agencies with the same digests and numbers. The files are not compared:
// they carry the revision. Same periods and adjustments mean the same
// statements; the digest covers everything else an agency's entry records
// of its document (its recipient, locale and terms), which a close reads
// prev without (Manifest.lighten).
func (c *Closer) unchanged(prev, man *Manifest) bool {
	a, b := *prev, *man
	a.Files, b.Files = nil, nil
	a.Agencies, b.Agencies = nil, nil
	if len(prev.Agencies) != len(man.Agencies) {
		return false
	}
	for i, e := range prev.Agencies {
		o := man.Agencies[i]
		if e.AgencyID != o.AgencyID || e.Digest != o.Digest || e.Number != o.Number {
			return false // a document changed (the digest covers it)
		}
	}
	return a.SameContent(&b)
}

// addPeriods reads the manifest and summary of each period, Concurrency
// at a time, and adds them to b and man.
func (c *Closer) addPeriods(ctx context.Context, b *statement.Builder, man *Manifest, periods []report.Period, rates bool) error {
	type got struct {
		ref   statement.PeriodRef
		rows  []report.SummaryRow
		rates *pricing.Table
		err   error
	}
	out := make([]got, len(periods))
	sem := make(chan struct{}, max(c.Concurrency, 1))
	var wg sync.WaitGroup
	for i, p := range periods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i].ref, out[i].rows, out[i].rates, out[i].err = c.readPeriod(ctx, p)
		}()
	}
	wg.Wait()
	for _, g := range out {
		if g.err != nil {
			return g.err
		}
		if rates {
			b.AddPeriodRates(g.ref, g.rows, g.rates)
		} else {
			b.AddPeriod(g.ref, g.rows)
		}
		man.Periods = append(man.Periods, PeriodEntry{Key: g.ref.ManifestKey, Start: g.ref.Period.Start, End: g.ref.Period.End,
			Revision: g.ref.Revision, Digest: g.ref.Digest})
	}
	return nil
}

// readPeriod reads period p's current manifest and summary rows, and the
// rate table it records (nil when none).
func (c *Closer) readPeriod(ctx context.Context, p report.Period) (statement.PeriodRef, []report.SummaryRow, *pricing.Table, error) {
	cur, err := c.Periods.Current(ctx, p)
	if err != nil {
		return statement.PeriodRef{}, nil, nil, err
	}
	if cur.Manifest == nil {
		return statement.PeriodRef{}, nil, nil, fmt.Errorf("period %s is delivered (before the checkpoint) but has no manifest: run verify --repair", p.Name())
	}
	rows, err := c.Periods.PreviousSummary(ctx, cur, c.Dir)
	if err != nil {
		return statement.PeriodRef{}, nil, nil, fmt.Errorf("period %s: %w", p.Name(), err)
	}
	ref := statement.PeriodRef{Period: p, Revision: cur.Manifest.Revision, ManifestKey: report.ManifestKey(p),
		Digest: report.ContentDigest(cur.Manifest), ManifestSHA256: report.SHA256Hex(cur.Raw)}
	return ref, rows, cur.Manifest.Rates, nil
}

// carryAdjustments adds the adjustments prev booked (a draft's) to b and
// man, with their rows read back from prev's adjustments file.
// With legacy (checking prev's own files), they are carried as they are.
func (c *Closer) carryAdjustments(ctx context.Context, b *statement.Builder, man *Manifest, prev *Manifest, legacy bool) ([]report.AdjustmentRow, error) {
	if len(prev.Adjustments) == 0 {
		return nil, nil
	}
	var info *report.FileInfo
	for i, f := range prev.Files {
		if strings.HasPrefix(f.Key, report.MonthManifestPrefix(prev.Month)+adjustmentsBase+"-") {
			info = &prev.Files[i]
		}
	}
	var rows []report.AdjustmentRow
	if info != nil {
		f, n, err := c.Periods.Fetch(ctx, *info, c.Dir)
		if err != nil {
			return nil, fmt.Errorf("read the adjustments booked in %s: %w", prev.Month, err)
		}
		rows, err = encode.ReadAdjustmentsParquet(f, n)
		f.Close()
		os.Remove(f.Name())
		if err != nil {
			return nil, fmt.Errorf("read the adjustments booked in %s: %w", prev.Month, err)
		}
	}
	for _, a := range prev.Adjustments {
		var mine []report.AdjustmentRow
		for _, r := range rows {
			if r.PeriodStart.Equal(a.PeriodStart) && int(r.Revision) == a.ToRevision {
				mine = append(mine, r)
			}
		}
		p := report.Period{Start: a.PeriodStart.UTC(), End: a.PeriodEnd.UTC()}
		if a.Digest == "" && !legacy {
			// Booked before digests: its digest, when the period still
			// holds the very revision booked (its manifest's bytes).
			cur, err := c.Periods.Current(ctx, p)
			if err != nil {
				return nil, err
			}
			if cur.Manifest != nil && cur.Manifest.Revision == a.ToRevision && report.SHA256Hex(cur.Raw) == a.SHA256 {
				a.Digest = report.ContentDigest(cur.Manifest)
			}
		}
		b.AddAdjustment(p, a.PeriodMonth, a.FromRevision, a.ToRevision, a.Reason, a.Digest, mine)
		man.Adjustments = append(man.Adjustments, a)
	}
	return rows, nil
}

// bookAdjustment books the restatement of period p (of a final month) in
// month m: the difference between its current revision and the one the
// statements account for. Each restatement is taken in before the next
// publication of the period (the close runs after every command that
// publishes), so the current revision is at most one past the booked one,
// and its adjustments file is that difference.
func (c *Closer) bookAdjustment(ctx context.Context, months *monthSet, b *statement.Builder, man *Manifest, p report.Period, m string) ([]report.AdjustmentRow, int, error) {
	pm := statement.MonthOf(p.Start, c.Loc)
	booked, err := months.booked(ctx, c, p, pm, statement.Prev(m))
	if err != nil {
		return nil, 0, err
	}
	booked = max(booked, man.Booked(p.Start))
	cur, err := c.Periods.Current(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	if cur.Manifest == nil {
		return nil, 0, fmt.Errorf("period %s of final month %s has no manifest: run verify --repair", p.Name(), pm)
	}
	k := cur.Manifest.Revision
	switch {
	case k <= booked:
		return nil, 0, nil // taken in already
	case k > booked+1:
		return nil, 0, fmt.Errorf("period %s is at revision %d, and the statements account for revision %d: "+
			"the restatements in between were not taken in, so the difference cannot be booked from the period's record", p.Name(), k, booked)
	}
	rows, err := c.Periods.PreviousAdjustments(ctx, cur, c.Dir)
	if err != nil {
		return nil, 0, fmt.Errorf("period %s: %w", p.Name(), err)
	}
	var commission []CurrencyAmount
	sums := map[string]money.Total{}
	curs := map[string]money.Currency{}
	for _, r := range rows {
		s, _ := sums[r.Currency.Code].Add(r.Commission)
		sums[r.Currency.Code], curs[r.Currency.Code] = s, r.Currency
	}
	for code, t := range sums {
		commission = append(commission, CurrencyAmount{Currency: code, Amount: curs[code].FormatTotal(t)})
	}
	slices.SortFunc(commission, func(x, y CurrencyAmount) int { return cmp.Compare(x.Currency, y.Currency) })
	e := AdjustmentEntry{PeriodStart: p.Start, PeriodEnd: p.End, PeriodMonth: pm, FromRevision: booked, ToRevision: k,
		Reason: cur.Manifest.Reason, Key: report.ManifestKey(p), SHA256: report.SHA256Hex(cur.Raw),
		Digest: report.ContentDigest(cur.Manifest), Commission: commission}
	b.AddAdjustment(p, pm, booked, k, e.Reason, e.Digest, rows)
	man.Adjustments = append(man.Adjustments, e)
	c.Log.Info("prior-period adjustment booked", "month", m, "period", p.Name(), "period_month", pm,
		"from_revision", booked, "to_revision", k, "reason", e.Reason)
	return rows, 1, nil
}

// totals adds up the month's totals per currency, one statement at a
// time.
type totals struct {
	byCode map[string]*totalAcc
	err    error
}

type totalAcc struct {
	c        money.Currency
	agencies int64
	t        statement.Line
}

func (tt *totals) add(s *statement.Agency) {
	if tt.byCode == nil {
		tt.byCode = map[string]*totalAcc{}
	}
	for _, l := range s.Lines {
		a := tt.byCode[l.Currency.Code]
		if a == nil {
			a = &totalAcc{c: l.Currency}
			tt.byCode[l.Currency.Code] = a
		}
		a.agencies++
		a.t.PurchaseCount += l.PurchaseCount
		a.t.RefundCount += l.RefundCount
		for _, f := range []struct{ dst, src *money.Total }{
			{&a.t.Gross, &l.Gross}, {&a.t.Refunds, &l.Refunds}, {&a.t.Net, &l.Net}, {&a.t.Commission, &l.Commission},
			{&a.t.PriorPeriodAdjustments, &l.PriorPeriodAdjustments}, {&a.t.CommissionDue, &l.CommissionDue},
		} {
			var ok bool
			if *f.dst, ok = f.dst.Add(*f.src); !ok && tt.err == nil {
				tt.err = fmt.Errorf("a %s total overflows 128 bits", l.Currency.Code)
			}
		}
	}
}

// result returns the totals, by currency code.
func (tt *totals) result() ([]Total, error) {
	if tt.err != nil {
		return nil, tt.err
	}
	out := make([]Total, 0, len(tt.byCode))
	for _, a := range tt.byCode {
		c := a.c
		out = append(out, Total{Currency: c.Code, Agencies: a.agencies, PurchaseCount: a.t.PurchaseCount, RefundCount: a.t.RefundCount,
			Gross: c.FormatTotal(a.t.Gross), Refunds: c.FormatTotal(a.t.Refunds), Net: c.FormatTotal(a.t.Net),
			Commission: c.FormatTotal(a.t.Commission), PriorPeriodAdjustments: c.FormatTotal(a.t.PriorPeriodAdjustments),
			CommissionDue: c.FormatTotal(a.t.CommissionDue)})
	}
	slices.SortFunc(out, func(x, y Total) int { return cmp.Compare(x.Currency, y.Currency) })
	return out, nil
}

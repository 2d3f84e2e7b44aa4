package statement

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// Builder adds up one month's statements from the summaries of its
// periods and the prior-period adjustments booked in it. Its memory is
// O(agencies x currencies x days + agencies x periods) bits: the line items
// are never read. The order rows are added in does not matter.
//
// What it adds up is kept per agency, so that one agency's statement can be
// made at a time (Statement, in the order of IDs): a close of many agencies
// never holds them all as statements.
type Builder struct {
	job, month string
	loc        *time.Location
	agencies   map[string]*agencyAcc
	periods    []PeriodRef
	sorted     bool // periods sorted by start
	rated      bool // AddPeriodRates was called: statements have rate lines
	err        error
}

// agencyAcc is what one agency's statement adds up. Its slices are short
// (an agency's currencies, days and rates), so they are searched in place.
type agencyAcc struct {
	periods []time.Time // the starts of the periods with rows, ascending, once each
	lines   []*Line
	days    []Day
	adjs    []Adjustment
	rates   []rateEntry
}

// NewBuilder starts month (YYYY-MM in loc) of job.
func NewBuilder(job, month string, loc *time.Location) *Builder {
	return &Builder{job: job, month: month, loc: loc, agencies: map[string]*agencyAcc{}}
}

func (b *Builder) agency(id string) *agencyAcc {
	a := b.agencies[id]
	if a == nil {
		a = &agencyAcc{}
		b.agencies[id] = a
	}
	return a
}

// addPeriodStart notes that the agency has rows in the period starting at t.
func (a *agencyAcc) addPeriodStart(t time.Time) {
	n := len(a.periods)
	if n > 0 && !a.periods[n-1].Before(t) {
		i, found := slices.BinarySearchFunc(a.periods, t, func(x, y time.Time) int { return x.Compare(y) })
		if found {
			return
		}
		a.periods = slices.Insert(a.periods, i, t)
		return
	}
	a.periods = append(a.periods, t)
}

func (a *agencyAcc) line(c money.Currency) *Line {
	for _, l := range a.lines {
		if l.Currency.Code == c.Code {
			return l
		}
	}
	l := &Line{Currency: c}
	a.lines = append(a.lines, l)
	return l
}

func (a *agencyAcc) day(day string, c money.Currency) *Totals {
	for i := len(a.days) - 1; i >= 0; i-- {
		if d := &a.days[i]; d.Date == day && d.Currency.Code == c.Code {
			return &d.Totals
		}
	}
	// The currency of a day is its line's (the first seen), as before.
	a.days = append(a.days, Day{Date: day, Currency: a.line(c).Currency})
	return &a.days[len(a.days)-1].Totals
}

// AddPeriod adds one period revision (ref) with its summary rows.
func (b *Builder) AddPeriod(ref PeriodRef, rows []report.SummaryRow) {
	b.periods = append(b.periods, ref)
	b.sorted = false
	day := DayOf(ref.Period.Start, b.loc)
	for i := range rows {
		r := &rows[i]
		a := b.agency(r.AgencyID)
		a.addPeriodStart(ref.Period.Start)
		b.add(&a.line(r.Currency).Totals, r)
		b.add(a.day(day, r.Currency), r)
	}
}

// AddAdjustment books a prior-period adjustment: what revision to of the
// period (of month periodMonth) changed against revision from, one row per
// agency and currency (differences); digest is revision to's
// report.ContentDigest.
func (b *Builder) AddAdjustment(p report.Period, periodMonth string, from, to int, reason, digest string, rows []report.AdjustmentRow) {
	for i := range rows {
		r := &rows[i]
		adj := Adjustment{Period: p, Month: periodMonth, FromRevision: from, ToRevision: to, Reason: reason, Digest: digest,
			Currency: r.Currency}
		b.add(&adj.Totals, &r.SummaryRow)
		a := b.agency(r.AgencyID)
		l := a.line(r.Currency)
		l.PriorPeriodAdjustments = b.sum(l.PriorPeriodAdjustments, r.Commission)
		a.adjs = append(a.adjs, adj)
	}
}

func (b *Builder) add(t *Totals, r *report.SummaryRow) {
	t.PurchaseCount += r.PurchaseCount
	t.RefundCount += r.RefundCount
	t.Gross = b.sum(t.Gross, r.Gross)
	t.Refunds = b.sum(t.Refunds, r.Refunds)
	t.Net = b.sum(t.Net, r.Net)
	t.Commission = b.sum(t.Commission, r.Commission)
}

func (b *Builder) sum(x, y money.Total) money.Total {
	s, ok := x.Add(y)
	if !ok && b.err == nil {
		b.err = fmt.Errorf("month %s: a total overflows 128 bits", b.month)
	}
	return s
}

// IDs returns the ids of the agencies with a statement, sorted.
func (b *Builder) IDs() []string {
	ids := make([]string, 0, len(b.agencies))
	for id := range b.agencies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Statements returns every agency's statement, sorted by agency id, with
// status, revision and closesAt ("" for a final one) as given. Periods
// lists, for each agency, the periods it has rows in.
func (b *Builder) Statements(status Status, revision int, closesAt string) ([]*Agency, error) {
	ids := b.IDs()
	out := make([]*Agency, len(ids))
	for i, id := range ids {
		a, err := b.Statement(id, status, revision, closesAt)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, b.err
}

// Take is Statement that then forgets the agency: its last statement, for
// a caller that makes each agency's statement a last time in turn, so that
// what the builder holds shrinks as it goes.
func (b *Builder) Take(id string, status Status, revision int, closesAt string) (*Agency, error) {
	a, err := b.Statement(id, status, revision, closesAt)
	delete(b.agencies, id)
	return a, err
}

// Statement returns agency id's statement (as Statements does), a new one
// at each call; nil for an agency without one.
func (b *Builder) Statement(id string, status Status, revision int, closesAt string) (*Agency, error) {
	if b.err != nil {
		return nil, b.err
	}
	acc := b.agencies[id]
	if acc == nil {
		return nil, nil
	}
	if !b.sorted {
		slices.SortFunc(b.periods, func(x, y PeriodRef) int { return x.Period.Start.Compare(y.Period.Start) })
		b.sorted = true
	}
	a := &Agency{Job: b.job, AgencyID: id, Month: b.month, Zone: b.loc.String(), Status: status,
		Revision: revision, ClosesAt: closesAt}
	for _, ref := range b.periods {
		if _, ok := slices.BinarySearchFunc(acc.periods, ref.Period.Start, func(x, y time.Time) int { return x.Compare(y) }); ok {
			a.Periods = append(a.Periods, ref)
		}
	}
	a.Lines = make([]Line, 0, len(acc.lines))
	for _, l := range acc.lines {
		l.CommissionDue = b.sum(l.Commission, l.PriorPeriodAdjustments)
		a.Lines = append(a.Lines, *l)
	}
	if len(acc.days) > 0 {
		a.Days = slices.Clone(acc.days)
	}
	if len(acc.adjs) > 0 {
		a.Adjustments = slices.Clone(acc.adjs)
	}
	if b.rated {
		a.Rates = b.rateLines(acc)
	}
	slices.SortFunc(a.Lines, func(x, y Line) int { return cmp.Compare(x.Currency.Code, y.Currency.Code) })
	slices.SortFunc(a.Days, func(x, y Day) int {
		return cmp.Or(cmp.Compare(x.Date, y.Date), cmp.Compare(x.Currency.Code, y.Currency.Code))
	})
	slices.SortStableFunc(a.Adjustments, func(x, y Adjustment) int {
		return cmp.Or(x.Period.Start.Compare(y.Period.Start), cmp.Compare(x.ToRevision, y.ToRevision),
			cmp.Compare(x.Currency.Code, y.Currency.Code))
	})
	return a, b.err
}

// Periods returns the period revisions added, ascending.
func (b *Builder) Periods() []PeriodRef {
	slices.SortFunc(b.periods, func(x, y PeriodRef) int { return x.Period.Start.Compare(y.Period.Start) })
	b.sorted = true
	return b.periods
}

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
type Builder struct {
	job, month string
	loc        *time.Location
	lines      map[lineKey]*Line
	days       map[dayKey]*Totals
	agencies   map[string]*agencyAcc
	periods    []PeriodRef
	adjs       []Adjustment
	adjAgency  []string // the agency of each of adjs
	rates      map[rateKey]*rateAcc
	err        error
}

type lineKey struct{ agency, currency string }

type dayKey struct{ agency, day, currency string }

type agencyAcc struct {
	periods map[time.Time]bool // the starts of the periods with rows
}

// NewBuilder starts month (YYYY-MM in loc) of job.
func NewBuilder(job, month string, loc *time.Location) *Builder {
	return &Builder{job: job, month: month, loc: loc, lines: map[lineKey]*Line{}, days: map[dayKey]*Totals{},
		agencies: map[string]*agencyAcc{}}
}

func (b *Builder) agency(id string) *agencyAcc {
	a := b.agencies[id]
	if a == nil {
		a = &agencyAcc{periods: map[time.Time]bool{}}
		b.agencies[id] = a
	}
	return a
}

func (b *Builder) line(agency string, c money.Currency) *Line {
	k := lineKey{agency, c.Code}
	l := b.lines[k]
	if l == nil {
		l = &Line{Currency: c}
		b.lines[k] = l
	}
	return l
}

// AddPeriod adds one period revision (ref) with its summary rows.
func (b *Builder) AddPeriod(ref PeriodRef, rows []report.SummaryRow) {
	b.periods = append(b.periods, ref)
	day := DayOf(ref.Period.Start, b.loc)
	for i := range rows {
		r := &rows[i]
		b.agency(r.AgencyID).periods[ref.Period.Start] = true
		b.add(&b.line(r.AgencyID, r.Currency).Totals, r)
		k := dayKey{r.AgencyID, day, r.Currency.Code}
		d := b.days[k]
		if d == nil {
			d = &Totals{}
			b.days[k] = d
		}
		b.add(d, r)
	}
}

// AddAdjustment books a prior-period adjustment: what revision to of the
// period (of month periodMonth) changed against revision from, one row per
// agency and currency (differences); digest is revision to's
// report.ContentDigest.
func (b *Builder) AddAdjustment(p report.Period, periodMonth string, from, to int, reason, digest string, rows []report.AdjustmentRow) {
	for i := range rows {
		r := &rows[i]
		a := Adjustment{Period: p, Month: periodMonth, FromRevision: from, ToRevision: to, Reason: reason, Digest: digest,
			Currency: r.Currency}
		b.add(&a.Totals, &r.SummaryRow)
		b.agency(r.AgencyID)
		l := b.line(r.AgencyID, r.Currency)
		l.PriorPeriodAdjustments = b.sum(l.PriorPeriodAdjustments, r.Commission)
		b.adjs = append(b.adjs, a)
		b.adjAgency = append(b.adjAgency, r.AgencyID)
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

// Statements returns every agency's statement, sorted by agency id, with
// status, revision and closesAt ("" for a final one) as given. Periods
// lists, for each agency, the periods it has rows in.
func (b *Builder) Statements(status Status, revision int, closesAt string) ([]*Agency, error) {
	if b.err != nil {
		return nil, b.err
	}
	slices.SortFunc(b.periods, func(x, y PeriodRef) int { return x.Period.Start.Compare(y.Period.Start) })
	ids := make([]string, 0, len(b.agencies))
	for id := range b.agencies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	byID := make(map[string]*Agency, len(ids))
	out := make([]*Agency, len(ids))
	for i, id := range ids {
		a := &Agency{Job: b.job, AgencyID: id, Month: b.month, Zone: b.loc.String(), Status: status,
			Revision: revision, ClosesAt: closesAt}
		for _, ref := range b.periods {
			if b.agencies[id].periods[ref.Period.Start] {
				a.Periods = append(a.Periods, ref)
			}
		}
		out[i], byID[id] = a, a
	}
	for k, l := range b.lines {
		l.CommissionDue = b.sum(l.Commission, l.PriorPeriodAdjustments)
		byID[k.agency].Lines = append(byID[k.agency].Lines, *l)
	}
	for k, d := range b.days {
		a := byID[k.agency]
		c := b.lines[lineKey{k.agency, k.currency}].Currency
		a.Days = append(a.Days, Day{Date: k.day, Currency: c, Totals: *d})
	}
	for i, adj := range b.adjs {
		a := byID[b.adjAgency[i]]
		a.Adjustments = append(a.Adjustments, adj)
	}
	b.rateLines(byID)
	for _, a := range out {
		slices.SortFunc(a.Lines, func(x, y Line) int { return cmp.Compare(x.Currency.Code, y.Currency.Code) })
		slices.SortFunc(a.Days, func(x, y Day) int {
			return cmp.Or(cmp.Compare(x.Date, y.Date), cmp.Compare(x.Currency.Code, y.Currency.Code))
		})
		slices.SortStableFunc(a.Adjustments, func(x, y Adjustment) int {
			return cmp.Or(x.Period.Start.Compare(y.Period.Start), cmp.Compare(x.ToRevision, y.ToRevision),
				cmp.Compare(x.Currency.Code, y.Currency.Code))
		})
	}
	return out, b.err
}

// Periods returns the period revisions added, ascending.
func (b *Builder) Periods() []PeriodRef {
	slices.SortFunc(b.periods, func(x, y PeriodRef) int { return x.Period.Start.Compare(y.Period.Start) })
	return b.periods
}

package statement

import (
	"cmp"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
)

// UnknownBPS is RateLine.BPS for the periods whose manifests record no
// rate table (delivered before rates were recorded): the renderer prints
// the rate as unknown.
const UnknownBPS = -1

// How rate lines are made (stated here only). A period's rate for an
// agency is the rate the table its manifest records (report.Manifest.Rates)
// gives the agency at the period's start: its own schedule's, else the
// default's. The month's own periods' summary rows are added up per
// (agency, currency, day, rate); the days of an agency in a currency, in
// order, make runs at one rate, one RateLine each (From its first day, To
// its last). So a dated rate change shows as two lines, and a day whose
// periods were priced at two rates is the last day of one line and the
// first of the next. Summary rows cannot tell apart the transactions that
// carry their own commission_bps (or kept the rate a rebuilt revision
// billed them at): their net is counted on the line of the period's
// configured rate, and Commission stays what was billed, so it need not be
// Base x BPS.

// rateEntry adds up an agency's rows of one currency, day and rate.
type rateEntry struct {
	currency, day string
	bps           int32
	first         time.Time // the first period start added to it
	cur           money.Currency
	base, comm    money.Total
}

// RateOf returns the rate table t gives agency at instant at; UnknownBPS
// for a nil table.
func RateOf(t *pricing.Table, agency string, at time.Time) int32 {
	if t == nil {
		return UnknownBPS
	}
	if bps, ok := t.Agencies[agency].At(at); ok {
		return bps
	}
	bps, ok := t.Default.At(at)
	if !ok {
		return UnknownBPS
	}
	return bps
}

// AddPeriodRates is AddPeriod that also adds the period's rows to the
// statements' rate lines (Agency.Rates), rates being the table the
// period's manifest records (nil: none recorded, UnknownBPS). Without it,
// statements have no rate lines (those re-made for months published
// before rate lines).
func (b *Builder) AddPeriodRates(ref PeriodRef, rows []report.SummaryRow, rates *pricing.Table) {
	b.AddPeriod(ref, rows)
	b.rated = true
	day := DayOf(ref.Period.Start, b.loc)
	for i := range rows {
		r := &rows[i]
		acc := b.agencies[r.AgencyID]
		bps := RateOf(rates, r.AgencyID, ref.Period.Start)
		var a *rateEntry
		for j := len(acc.rates) - 1; j >= 0; j-- {
			if e := &acc.rates[j]; e.day == day && e.bps == bps && e.currency == r.Currency.Code {
				a = e
				break
			}
		}
		if a == nil {
			acc.rates = append(acc.rates, rateEntry{currency: r.Currency.Code, day: day, bps: bps, first: ref.Period.Start, cur: r.Currency})
			a = &acc.rates[len(acc.rates)-1]
		}
		if ref.Period.Start.Before(a.first) {
			a.first = ref.Period.Start
		}
		a.base = b.sum(a.base, r.Net)
		a.comm = b.sum(a.comm, r.Commission)
	}
}

// rateLines returns the rate lines of one agency's statement (nil when
// it has no rate rows).
func (b *Builder) rateLines(acc *agencyAcc) []RateLine {
	if len(acc.rates) == 0 {
		return nil
	}
	es := slices.Clone(acc.rates)
	slices.SortFunc(es, func(x, y rateEntry) int {
		return cmp.Or(cmp.Compare(x.currency, y.currency), cmp.Compare(x.day, y.day), x.first.Compare(y.first),
			cmp.Compare(x.bps, y.bps))
	})
	var out []RateLine
	for _, e := range es {
		if n := len(out); n > 0 && out[n-1].Currency.Code == e.currency && out[n-1].BPS == e.bps {
			l := &out[n-1]
			l.To, l.Base, l.Commission = e.day, b.sum(l.Base, e.base), b.sum(l.Commission, e.comm)
			continue
		}
		out = append(out, RateLine{Currency: e.cur, BPS: e.bps, From: e.day, To: e.day, Base: e.base, Commission: e.comm})
	}
	return out
}

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

type rateKey struct {
	agency, currency, day string
	bps                   int32
}

type rateAcc struct {
	first      time.Time // the first period start added to it
	currency   money.Currency
	base, comm money.Total
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
	if b.rates == nil {
		b.rates = map[rateKey]*rateAcc{}
	}
	day := DayOf(ref.Period.Start, b.loc)
	for i := range rows {
		r := &rows[i]
		k := rateKey{r.AgencyID, r.Currency.Code, day, RateOf(rates, r.AgencyID, ref.Period.Start)}
		a := b.rates[k]
		if a == nil {
			a = &rateAcc{first: ref.Period.Start, currency: r.Currency}
			b.rates[k] = a
		}
		if ref.Period.Start.Before(a.first) {
			a.first = ref.Period.Start
		}
		a.base = b.sum(a.base, r.Net)
		a.comm = b.sum(a.comm, r.Commission)
	}
}

// rateLines sets each statement's Rates (byID by agency id).
func (b *Builder) rateLines(byID map[string]*Agency) {
	type entry struct {
		k rateKey
		a *rateAcc
	}
	per := map[string][]entry{}
	for k, a := range b.rates {
		per[k.agency] = append(per[k.agency], entry{k, a})
	}
	for id, es := range per {
		slices.SortFunc(es, func(x, y entry) int {
			return cmp.Or(cmp.Compare(x.k.currency, y.k.currency), cmp.Compare(x.k.day, y.k.day), x.a.first.Compare(y.a.first),
				cmp.Compare(x.k.bps, y.k.bps))
		})
		var out []RateLine
		for _, e := range es {
			if n := len(out); n > 0 && out[n-1].Currency.Code == e.k.currency && out[n-1].BPS == e.k.bps {
				l := &out[n-1]
				l.To, l.Base, l.Commission = e.k.day, b.sum(l.Base, e.a.base), b.sum(l.Commission, e.a.comm)
				continue
			}
			out = append(out, RateLine{Currency: e.a.currency, BPS: e.k.bps, From: e.k.day, To: e.k.day, Base: e.a.base, Commission: e.a.comm})
		}
		byID[id].Rates = out
	}
}

package pdf

import (
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
)

// rates writes the commission applied per rate: currency, the days at the
// rate, the rate, the base and the commission. A line whose commission is
// not what its rate gives on its base is marked with an asterisk and a
// note under the table says why (offBase); an unknown rate (BPS -1)
// prints as "—".
func (d *sheet) rates() {
	if len(d.s.Rates) == 0 {
		return
	}
	d.heading(d.l.T("sec.rates"), 12)
	cols := []column{{d.l.T("col.currency"), 20, "L"}, {d.l.T("col.days"), 70, "L"}, {d.l.T("col.rate"), 22, "R"},
		{d.l.T("col.base"), 37, "R"}, {d.l.T("col.commission"), 37, "R"}}
	rows := make([][]string, len(d.s.Rates))
	marked := false
	for i, r := range d.s.Rates {
		days := d.l.Date(r.From)
		if r.To != r.From {
			days = d.l.T("rate.range", "from", d.l.Date(r.From), "to", d.l.Date(r.To))
		}
		rate := "—"
		if r.BPS >= 0 {
			rate = d.l.Rate(r.BPS)
		}
		commission := d.l.Amount(r.Currency, r.Commission)
		if d.offBase(r) {
			commission = "*" + commission
			marked = true
		}
		rows[i] = []string{r.Currency.Code, days, rate, d.l.Amount(r.Currency, r.Base), commission}
	}
	d.table(table{cols: cols, family: familyDoc, size: 8.5, rowH: 5}, rows, zebra)
	if marked {
		d.f.Ln(1)
		d.note("* " + d.l.T("rate.note"))
	}
}

// offBase reports whether r's commission differs from its rate times its
// base, rounded, by more than the rounding of its transactions could
// explain: more than one minor unit per transaction (purchases and
// refunds of its currency on its days, from the day-by-day lines). An
// unknown rate, a rate past 10000 bps or a base past int64 is never
// marked.
func (d *sheet) offBase(r statement.RateLine) bool {
	base, ok := r.Base.Int64()
	if r.BPS < 0 || r.BPS > 10000 || !ok {
		return false
	}
	var n int64
	for _, day := range d.s.Days {
		if day.Currency == r.Currency && day.Date >= r.From && day.Date <= r.To {
			n += day.PurchaseCount + day.RefundCount
		}
	}
	diff, ok := r.Commission.Sub(money.TotalOf(money.Commission(base, int64(r.BPS))))
	return !ok || diff.Cmp(money.TotalOf(n)) > 0 || diff.Cmp(money.TotalOf(-n)) < 0
}

package pdf

import (
	"math"
	"strconv"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// table writes rows under t's heading; a row that does not fit starts a
// new page, which repeats the heading.
func (d *sheet) table(t table, rows [][]string, style rowStyle) {
	header := func() { d.header(t) }
	d.ensure(d.headerH(t) + min(1, float64(len(rows)))*t.rowH)
	header()
	for i, row := range rows {
		if d.f.GetY()+t.rowH > bodyBottom {
			d.newPage()
			header()
		}
		bold, shade := style(i)
		weight := ""
		if bold {
			weight = "B"
		}
		d.font(t.family, weight, t.size)
		d.fill(colZebra)
		d.f.SetX(marginX)
		for j, c := range t.cols {
			cell := ""
			if j < len(row) {
				cell = row[j]
			}
			d.cell(c.w, t.rowH, cell, c.align, shade)
		}
		d.f.Ln(t.rowH)
	}
	d.draw(colRule)
	d.f.Line(marginX, d.f.GetY(), marginX+width(t.cols), d.f.GetY())
}

// The chart's geometry, in millimetres.
const (
	docPlotH  = 34.0
	docLabelW = 24.0
)

// chart draws one bar chart of daily commission: the currency with the
// largest absolute commission of the month's own periods, every day of
// the month on the x axis, a few gridlines labelled in the locale.
func (d *sheet) chart() {
	if len(d.s.Lines) == 0 {
		return
	}
	best := d.s.Lines[0]
	for _, l := range d.s.Lines[1:] {
		if math.Abs(units(l.Currency, l.Commission)) > math.Abs(units(best.Currency, best.Commission)) {
			best = l
		}
	}
	c := best.Currency
	d.heading(d.l.T("sec.chart", "currency", c.Code), docPlotH+8)
	f := d.f
	ndays := time.Date(d.month.Year(), d.month.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
	vals := make([]float64, ndays+1)
	hi, lo := 0.0, 0.0
	for _, day := range d.s.Days {
		if day.Currency != c || len(day.Date) != len("2006-01-02") || day.Date[:7] != d.s.Month {
			continue
		}
		n, err := strconv.Atoi(day.Date[8:])
		if err != nil || n < 1 || n > ndays {
			continue
		}
		vals[n] = units(c, day.Commission)
		hi, lo = max(hi, vals[n]), min(lo, vals[n])
	}
	step := niceStep((hi-lo)/4, c.Digits)
	top, bottom := math.Ceil(hi/step)*step, math.Floor(lo/step)*step
	if top == bottom {
		top = bottom + step
	}
	x0, y0 := marginX+docLabelW, f.GetY()+2
	plotW := contentW - docLabelW
	yOf := func(v float64) float64 { return y0 + docPlotH*(top-v)/(top-bottom) }

	d.font(familyDoc, "", 6.5)
	d.text(colMuted)
	d.draw(colRule)
	if hi == 0 && lo == 0 {
		bottom, top = 0, step // only the zero line, labelled
	}
	for k := math.Round(bottom / step); k*step <= top+step/2; k++ {
		if hi == 0 && lo == 0 && k != 0 {
			continue
		}
		v := k * step
		gy := yOf(v)
		if k == 0 {
			f.SetLineWidth(0.35)
		}
		f.Line(x0, gy, x0+plotW, gy)
		f.SetLineWidth(0.2)
		f.SetXY(marginX, gy-2)
		d.cell(docLabelW-1, 4, d.axisLabel(c, k, step), "R", false)
	}
	if hi == 0 && lo == 0 {
		f.SetXY(x0, y0+docPlotH/2-2)
		d.cell(plotW, 4, d.l.T("chart.no_activity"), "C", false)
	}
	slot := plotW / float64(ndays)
	zero := yOf(0)
	for n := 1; n <= ndays; n++ {
		bx := x0 + float64(n-1)*slot + slot*0.18
		if v := vals[n]; v > 0 {
			d.fill(colBarPos)
			f.Rect(bx, yOf(v), slot*0.64, zero-yOf(v), "F")
		} else if v < 0 {
			d.fill(colBarNeg)
			f.Rect(bx, zero, slot*0.64, yOf(v)-zero, "F")
		}
		if n == 1 || n%5 == 0 && ndays-n >= 2 || n == ndays {
			f.SetXY(x0+float64(n-1)*slot-3, y0+docPlotH+0.8)
			d.cell(slot+6, 3.5, d.l.Int(int64(n)), "C", false)
		}
	}
	d.text(colText)
	f.SetY(y0 + docPlotH + 6)
}

// units is t in whole units of c, for drawing and comparing only: never
// for arithmetic on money.
func units(c money.Currency, t money.Total) float64 { return commissionOf(t) / math.Pow10(c.Digits) }

// niceStep is the gridline step for about raw per line: 1, 2, 2.5 or 5
// times a power of ten, at least one minor unit of a currency with digits
// decimals.
func niceStep(raw float64, digits int) float64 {
	least := math.Pow10(-digits)
	if raw <= least {
		return least
	}
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return max(m*mag, least)
		}
	}
	return 10 * mag
}

// axisLabel is k*step in the locale: a whole number of units without
// decimals, else exactly in the currency's digits.
func (d *sheet) axisLabel(c money.Currency, k, step float64) string {
	minor := math.Round(k * step * math.Pow10(c.Digits))
	if units := minor / math.Pow10(c.Digits); units == math.Trunc(units) && math.Abs(units) < 1e15 {
		return d.l.Int(int64(units))
	}
	return d.l.Amount(c, money.TotalOf(int64(minor)))
}

// days writes the day-by-day table.
func (d *sheet) days() {
	if len(d.s.Days) == 0 {
		return
	}
	d.heading(d.l.T("sec.days"), 20)
	cols := []column{
		{d.l.T("col.date"), 28, "L"}, {d.l.T("col.currency"), 14, "L"}, {d.l.T("col.purchases"), 17, "R"},
		{d.l.T("col.refunds"), 24, "R"}, {d.l.T("col.gross"), 25.75, "R"}, {d.l.T("col.refund_amount"), 25.75, "R"},
		{d.l.T("col.net"), 25.75, "R"}, {d.l.T("col.commission"), 25.75, "R"},
	}
	rows := make([][]string, len(d.s.Days))
	shaded := make([]bool, len(d.s.Days))
	for i, day := range d.s.Days {
		c := day.Currency
		shaded[i] = i > 0 && (shaded[i-1] != (day.Date != d.s.Days[i-1].Date))
		rows[i] = []string{d.l.Date(day.Date), c.Code, d.l.Int(day.PurchaseCount), d.l.Int(day.RefundCount),
			d.l.Amount(c, day.Gross), d.l.Amount(c, day.Refunds), d.l.Amount(c, day.Net), d.l.Amount(c, day.Commission)}
	}
	d.table(table{cols: cols, family: familyDoc, size: 8, rowH: 4.4}, rows,
		func(i int) (bool, bool) { return false, shaded[i] })
}

// adjustments writes the prior-period adjustment lines.
func (d *sheet) adjustments() {
	if len(d.s.Adjustments) == 0 {
		return
	}
	d.heading(d.l.T("sec.adjustments"), 15)
	cols := []column{{d.l.T("col.period"), 80, "L"}, {d.l.T("col.currency"), 14, "L"}, {d.l.T("col.gross"), 23, "R"},
		{d.l.T("col.refund_amount"), 23, "R"}, {d.l.T("col.net"), 23, "R"}, {d.l.T("col.commission"), 23, "R"}}
	rows := make([][]string, len(d.s.Adjustments))
	for i, a := range d.s.Adjustments {
		c := a.Currency
		line := d.l.T("adj.line", "period", d.periodText(a.Period), "from", d.l.Int(int64(a.FromRevision)),
			"to", d.l.Int(int64(a.ToRevision)), "reason", d.l.T(reasonKey(a.Reason)))
		rows[i] = []string{line, c.Code, d.l.Amount(c, a.Gross), d.l.Amount(c, a.Refunds), d.l.Amount(c, a.Net), d.l.Amount(c, a.Commission)}
	}
	d.table(table{cols: cols, family: familyDoc, size: 7.5, rowH: 4.6}, rows, zebra)
}

// reasonKey is the catalog key of a manifest's reason.
func reasonKey(reason string) string {
	switch reason {
	case report.ReasonRecheck:
		return "reason.recheck"
	case report.ReasonBackfill:
		return "reason.backfill"
	case report.ReasonRepair, report.ReasonReprice:
		return "reason.repair"
	}
	return "reason.other"
}

// periodText is a period in the statement's zone as the locale writes its
// day: "30 April 2026 23:00–24:00", both ends in full when they are on
// different days.
func (d *sheet) periodText(p report.Period) string {
	s, e := p.Start.In(d.zone), p.End.In(d.zone)
	head := d.l.Date(s.Format(time.DateOnly)) + " " + s.Format("15:04")
	switch {
	case s.Format(time.DateOnly) == e.Format(time.DateOnly):
		return head + "–" + e.Format("15:04")
	case e.Equal(time.Date(s.Year(), s.Month(), s.Day()+1, 0, 0, 0, 0, d.zone)):
		return head + "–24:00"
	}
	return head + " – " + d.l.Date(e.Format(time.DateOnly)) + " " + e.Format("15:04")
}

// parseInstant parses an RFC 3339 instant.
func parseInstant(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) }

// appendix writes the audit chain on a page of its own: every period the
// statement covers and every restated period its adjustments come from,
// with the revision and the digest of what it holds (a LegacyChain
// statement: its manifest's sha256), in two compact columns.
func (d *sheet) appendix() {
	var all []statement.PeriodRef
	all = append(all, d.s.Periods...)
	for _, a := range d.s.Adjustments {
		if n := len(all); n > len(d.s.Periods) && all[n-1].Period == a.Period && all[n-1].Revision == a.ToRevision {
			continue
		}
		all = append(all, statement.PeriodRef{Period: a.Period, Revision: a.ToRevision, Digest: a.Digest})
	}
	d.newPage()
	d.font(familyDoc, "B", 11.5)
	d.f.SetX(marginX)
	d.cell(contentW, 6, d.l.T("sec.appendix"), "L", false)
	d.f.Ln(7)
	d.note(d.l.T("appendix.intro"))
	d.note(d.tn("appendix.periods", len(d.s.Periods)))
	if len(all) == 0 {
		return
	}
	const (
		size, rowH = 5.2, 2.6
		nameW      = 17.5
		revW       = 8.0
		half       = contentW / 2
		digestW    = half - nameW - revW - 1
	)
	t := table{cols: []column{{d.l.T("col.period"), nameW, "L"}, {d.l.T("col.revision"), revW, "R"},
		{d.l.T("col.digest"), digestW, "L"}}, size: 6.5, rowH: rowH}
	header := func(y float64) {
		for k := range 2 {
			d.f.SetY(y)
			d.headerAt(t, marginX+float64(k)*half)
		}
		d.f.SetY(y + d.headerH(t) + 0.5)
	}
	d.ensure(10)
	for start := 0; start < len(all); {
		header(d.f.GetY())
		y := d.f.GetY()
		per := max(1, int((bodyBottom-y)/rowH))
		d.font(familyMono, "", size)
		for k := range 2 {
			for i := range per {
				j := start + k*per + i
				if j >= len(all) {
					break
				}
				p := all[j]
				digest := p.Digest
				if d.s.LegacyChain && j < len(d.s.Periods) {
					digest = p.ManifestSHA256
				}
				d.f.SetXY(marginX+float64(k)*half, y+float64(i)*rowH)
				d.cell(nameW, rowH, p.Period.Name(), "L", false)
				d.cell(revW, rowH, strconv.Itoa(p.Revision), "R", false)
				d.cell(digestW, rowH, digest, "L", false)
			}
		}
		rows := min(per, len(all)-start)
		start += 2 * per
		d.f.SetY(y + float64(rows)*rowH)
		if start < len(all) {
			d.newPage()
		}
	}
}

package pdf

import (
	"strconv"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// Chart geometry, in millimetres.
const (
	chartTitleH = 5.0
	chartPlotH  = 24.0
	chartAxisH  = 4.5
	chartH      = chartTitleH + chartPlotH + chartAxisH + 3
	chartLabelW = 22.0 // the y-axis labels left of the plot
	chartGap    = 6.0  // between two charts side by side
)

// charts draws one bar chart of daily commission per currency: amounts in
// different currencies do not share a scale. One currency gets the full
// width; more are drawn two side by side.
func (d *doc) charts() {
	if len(d.s.Lines) == 0 {
		return
	}
	d.heading("Daily commission", chartH)
	perRow := 2
	if len(d.s.Lines) == 1 {
		perRow = 1
	}
	w := (contentW - float64(perRow-1)*chartGap) / float64(perRow)
	rowY := d.f.GetY()
	for i, l := range d.s.Lines {
		if i%perRow == 0 {
			if i > 0 {
				d.f.SetY(rowY + chartH)
			}
			d.ensure(chartH)
			rowY = d.f.GetY()
		}
		x := marginX + float64(i%perRow)*(w+chartGap)
		d.chart(x, rowY, w, l.Currency)
	}
	d.f.SetY(rowY + chartH)
}

// chart draws the daily commission of currency c in the box at (x, y) of
// width w: a bar per day of the month (none on a day without activity),
// negative days below the zero line in another colour.
func (d *doc) chart(x, y, w float64, c money.Currency) {
	f := d.f
	ndays := time.Date(d.month.Year(), d.month.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
	vals := make([]money.Total, ndays+1) // by day of month, 1..ndays
	has := make([]bool, ndays+1)
	var hi, lo money.Total // max(0, values), min(0, values)
	for _, day := range d.s.Days {
		if day.Currency != c || len(day.Date) != len("2006-01-02") || day.Date[:7] != d.s.Month {
			continue
		}
		n, err := strconv.Atoi(day.Date[8:])
		if err != nil || n < 1 || n > ndays {
			continue
		}
		vals[n], has[n] = day.Commission, true
		if day.Commission.Cmp(hi) > 0 {
			hi = day.Commission
		}
		if day.Commission.Cmp(lo) < 0 {
			lo = day.Commission
		}
	}

	d.font(familySans, "B", 8)
	d.setText(colText)
	f.SetXY(x, y)
	d.text(w, chartTitleH, "Daily commission, "+c.Code, "LM", false)

	plotX, plotY := x+chartLabelW, y+chartTitleH+1
	plotW := w - chartLabelW - 1
	hiF, loF := commissionOf(hi), commissionOf(lo)
	span := hiF - loF
	zeroY := plotY + chartPlotH
	if span > 0 {
		zeroY = plotY + chartPlotH*hiF/span
	}

	// Grid lines and their labels: the highest day, zero, the lowest day.
	d.font(familySans, "", 6)
	d.setText(colMuted)
	d.setDraw(colRule)
	gridLine := func(gy float64, label string) {
		f.Line(plotX, gy, plotX+plotW, gy)
		f.SetXY(x, gy-2)
		d.text(chartLabelW-0.5, 4, label, "RM", false)
	}
	if hi.Sign() > 0 {
		gridLine(plotY, c.FormatTotal(hi))
	}
	if lo.Sign() < 0 {
		gridLine(plotY+chartPlotH, c.FormatTotal(lo))
	}
	f.SetLineWidth(0.3)
	gridLine(zeroY, "0")
	f.SetLineWidth(0.2)
	if hi.IsZero() && lo.IsZero() {
		f.SetXY(plotX, plotY+chartPlotH/2-4)
		d.text(plotW, 4, "no commission this month", "CM", false)
	}

	slot := plotW / float64(ndays)
	for n := 1; n <= ndays; n++ {
		bx := plotX + float64(n-1)*slot + slot*0.15
		if has[n] && span > 0 && !vals[n].IsZero() {
			h := chartPlotH * commissionOf(vals[n]) / span
			if h > 0 {
				d.setFill(colBarPos)
				f.Rect(bx, zeroY-h, slot*0.7, h, "F")
			} else {
				d.setFill(colBarNeg)
				f.Rect(bx, zeroY, slot*0.7, -h, "F")
			}
		}
		if n == 1 || n%5 == 0 || n == ndays && ndays%5 > 1 {
			f.SetXY(plotX+float64(n-1)*slot-2, plotY+chartPlotH+0.5)
			d.text(slot+4, chartAxisH, strconv.Itoa(n), "CM", false)
		}
	}
	d.setText(colText)
}

package pdf

import (
	"slices"
	"strings"
)

// headMin is the smallest size of a column heading, in points: a heading
// that does not fit its column at the table's size wraps onto two lines
// at a size down to headMin, and a word still too wide is abbreviated.
const headMin = 6.0

// ptMM is the height of a point in millimetres.
const ptMM = 25.4 / 72

// headLines lays out a column heading: its lines (read only) and their
// size. It leaves the table's bold font current, at that size.
func (d *sheet) headLines(t table, c column) ([]string, float64) {
	k := layoutKey{kind: kindHead, size: t.size, w: c.w, auto: d.auto, text: c.title}
	return d.memoized(k, func() ([]string, float64) { return d.headText(t, c) })
}

// headText is headLines without the memo.
func (d *sheet) headText(t table, c column) ([]string, float64) {
	avail := c.w - 2*cellMargin
	d.font(familyDoc, "B", t.size)
	title := prep(c.title)
	if d.widthOf(d.runs(title)) <= avail {
		return []string{title}, t.size
	}
	for size := t.size; size >= headMin; size -= 0.25 {
		d.font(familyDoc, "B", size)
		if lines := d.wrap(title, avail); len(lines) <= 2 && d.fits(lines, avail) {
			return lines, size
		}
	}
	d.font(familyDoc, "B", headMin)
	lines := slices.Clone(d.wrap(title, avail)) // changed below
	if len(lines) > 2 {
		lines = []string{lines[0], strings.Join(lines[1:], " ")}
	}
	for i, l := range lines {
		if d.widthOf(d.runs(l)) > avail {
			lines[i] = d.abbreviate(l, avail)
		}
	}
	return lines, headMin
}

// fits reports whether every line is at most w wide in the current font.
func (d *sheet) fits(lines []string, w float64) bool {
	for _, l := range lines {
		if d.widthOf(d.runs(l)) > w {
			return false
		}
	}
	return true
}

// abbreviate is s cut to the longest start that fits w with a full stop
// ("Revision" -> "Rev."), at least one letter (cell shrinks it further if
// even that does not fit).
func (d *sheet) abbreviate(s string, w float64) string {
	r := []rune(s)
	for n := len(r) - 1; n > 1; n-- {
		if a := strings.TrimRight(string(r[:n]), " -") + "."; d.widthOf(d.runs(a)) <= w {
			return a
		}
	}
	return string(r[:1]) + "."
}

// headerH is the height of t's heading row: one line at the table's
// size, or taller when a heading wraps.
func (d *sheet) headerH(t table) float64 {
	h := t.rowH + 1
	for _, c := range t.cols {
		lines, size := d.headLines(t, c)
		if len(lines) > 1 {
			h = max(h, float64(len(lines))*size*ptMM*1.15+1.6)
		}
	}
	return h
}

// header writes t's heading row at the cursor, from the left margin.
func (d *sheet) header(t table) { d.headerAt(t, marginX) }

// headerAt writes t's heading row at the cursor's y, from x, and leaves
// the cursor at the left margin below it.
func (d *sheet) headerAt(t table, x float64) {
	h := d.headerH(t)
	d.fill(colHeadFill)
	d.text(colText)
	y := d.f.GetY()
	for _, c := range t.cols {
		lines, size := d.headLines(t, c)
		d.font(familyDoc, "B", size)
		d.f.Rect(x, y, c.w, h, "F")
		lineH := size * ptMM * 1.15
		top := y + (h-float64(len(lines))*lineH)/2
		if len(lines) == 1 {
			lineH, top = h, y
		}
		for i, l := range lines {
			d.f.SetXY(x, top+float64(i)*lineH)
			d.cell(c.w, lineH, l, c.align, false)
		}
		x += c.w
	}
	d.f.SetXY(marginX, y+h)
}

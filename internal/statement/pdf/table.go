package pdf

// column is one column of a table: its heading, width in millimetres and
// alignment ("L" or "R").
type column struct {
	title string
	w     float64
	align string
}

// table is the look of a table: its columns, the font of its rows and
// the height of a row.
type table struct {
	cols   []column
	family string
	size   float64
	rowH   float64
}

// header writes t's heading row at the cursor.
func (d *doc) tableHeader(t table) {
	d.font(familySans, "B", t.size)
	d.setFill(colHeadFill)
	d.setText(colText)
	d.f.SetX(marginX)
	for _, c := range t.cols {
		d.text(c.w, t.rowH+1, c.title, c.align+"M", true)
	}
	d.f.Ln(t.rowH + 1)
}

// rowStyle reports whether row i is set in bold and whether it is shaded.
type rowStyle func(i int) (bold, shade bool)

// zebra shades every other row.
func zebra(i int) (bold, shade bool) { return false, i%2 == 1 }

// tableRows writes rows under t's heading; a row that does not fit starts
// a new page, which repeats the heading.
func (d *doc) tableRows(t table, rows [][]string, style rowStyle) {
	d.tableHeader(t)
	for i, row := range rows {
		if d.f.GetY()+t.rowH > bodyBottom {
			d.newPage()
			d.tableHeader(t)
		}
		bold, shade := style(i)
		weight := ""
		if bold {
			weight = "B"
		}
		d.font(t.family, weight, t.size)
		d.setFill(colZebra)
		d.f.SetX(marginX)
		for j, c := range t.cols {
			cell := ""
			if j < len(row) {
				cell = row[j]
			}
			d.text(c.w, t.rowH, cell, c.align+"M", shade)
		}
		d.f.Ln(t.rowH)
	}
	d.setDraw(colRule)
	d.f.Line(marginX, d.f.GetY(), marginX+width(t.cols), d.f.GetY())
}

// width is the total width of cols.
func width(cols []column) float64 {
	w := 0.0
	for _, c := range cols {
		w += c.w
	}
	return w
}

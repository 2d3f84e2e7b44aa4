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

// rows writes rows under t's heading; a row that does not fit starts a new
// page, which repeats the heading. bold reports the rows set in bold (nil:
// none).
func (d *doc) tableRows(t table, rows [][]string, bold func(i int) bool) {
	d.tableHeader(t)
	for i, row := range rows {
		if d.f.GetY()+t.rowH > bodyBottom {
			d.newPage()
			d.tableHeader(t)
		}
		style := ""
		if bold != nil && bold(i) {
			style = "B"
		}
		d.font(t.family, style, t.size)
		d.setFill(colZebra)
		d.f.SetX(marginX)
		for j, c := range t.cols {
			cell := ""
			if j < len(row) {
				cell = row[j]
			}
			d.text(c.w, t.rowH, cell, c.align+"M", i%2 == 1)
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

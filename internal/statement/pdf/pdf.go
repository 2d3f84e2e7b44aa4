// Package pdf renders an agency's monthly statement (statement.Agency) as
// the PDF the agency receives: who and which month, draft or final, per
// currency the totals and the commission due, a chart of daily commission,
// the day-by-day table, the prior-period adjustments and the audit chain
// (every period the statement covers, and each restated period its
// adjustments come from, with its revision and digest; a LegacyChain
// statement: its manifest sha256), on A4 pages numbered "page n of m".
//
// The PDF is written with github.com/go-pdf/fpdf (v0.9.0, patched in
// third_party/fpdf to do its per-font work once per process, same bytes)
// and the embedded Go fonts.
// Every agency id prints: a rune the fonts lack is replaced by U+FFFD, one
// for one, never an error. The same statement always renders to the same
// bytes: the document dates are fixed (the first instant of the statement's
// month, UTC), resources are written in sorted order and the trailer has no
// /ID.
package pdf

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-pdf/fpdf"

	"github.com/reportjob/reportjob/internal/statement"
)

// ErrBadStatement is returned for a statement Render cannot lay out (nil,
// or a month that is not YYYY-MM).
var ErrBadStatement = errors.New("statement cannot be rendered")

// Page geometry, in millimetres (A4 portrait).
const (
	pageW, pageH = 210.0, 297.0
	marginX      = 12.0
	marginTop    = 12.0
	contentW     = pageW - 2*marginX
	// bodyBottom is the lowest y a table row may reach: below it sit the
	// footer's rule and page number.
	bodyBottom = pageH - 16.0
	footerY    = pageH - 11.0
)

// Colours (RGB).
var (
	colText     = rgb{25, 25, 25}
	colMuted    = rgb{100, 100, 100}
	colRule     = rgb{170, 170, 170}
	colHeadFill = rgb{225, 230, 238}
	colZebra    = rgb{244, 246, 249}
	colDraft    = rgb{176, 60, 0}
	colFinal    = rgb{0, 110, 60}
	colBarPos   = rgb{45, 90, 160}
	colBarNeg   = rgb{190, 60, 40}
)

type rgb struct{ r, g, b int }

// Render writes s as a PDF to w with the embedded fonts only (no
// statements.fonts). It returns an error only when s is nil or its Month
// is not YYYY-MM, or when w fails: any text in s prints.
func Render(w io.Writer, s *statement.Agency) error { return plain.Render(w, s) }

// plain is the Renderer without configured fonts.
var plain = &Renderer{}

// renderLegacy writes a statement without a Doc (published before
// version 4) as it was published then: these bytes are in its month's
// manifest, and a restore of a final month renders them again.
func renderLegacy(w io.Writer, s *statement.Agency, month time.Time) error {
	d := newDoc(s, month)
	d.titleBlock()
	d.summary()
	d.charts()
	d.days()
	d.adjustments()
	d.auditChain()
	d.pageFurniture()
	if err := d.f.Error(); err != nil {
		return fmt.Errorf("render statement pdf for agency %q month %s: %w", s.AgencyID, s.Month, err)
	}
	if err := d.f.Output(w); err != nil {
		return fmt.Errorf("write statement pdf for agency %q month %s: %w", s.AgencyID, s.Month, err)
	}
	return nil
}

// doc is one statement being laid out.
type doc struct {
	f     *fpdf.Fpdf
	s     *statement.Agency
	month time.Time // first instant of the month, UTC
}

func newDoc(s *statement.Agency, month time.Time) *doc {
	f := fpdf.New("P", "mm", "A4", "")
	for _, ff := range fontFiles {
		// The bytes are shared: the patched fpdf only reads them (it no
		// longer writes into them while it cuts the subset). The sum was
		// computed once: hashing the fonts per document cost a tenth of
		// the render.
		f.AddUTF8FontFromBytesSum(ff.family, ff.style, ff.ttf, ff.sum)
	}
	// Determinism: no clock, no random ids, resources in sorted order.
	f.SetCreationDate(month)
	f.SetModificationDate(month)
	f.SetCatalogSort(true)
	f.SetCompression(true)
	f.SetProducer("reportjob", false)
	f.SetCreator("reportjob", false)
	f.SetTitle(printable(fmt.Sprintf("Statement %s %s %s", s.AgencyID, s.Month, statusWord(s.Status))), true)
	f.SetSubject(printable("Monthly commission statement, job "+s.Job), true)
	f.SetMargins(marginX, marginTop, marginX)
	f.SetAutoPageBreak(false, 0)
	f.SetCellMargin(1.2)
	f.SetLineWidth(0.2)
	d := &doc{f: f, s: s, month: month}
	d.setText(colText)
	f.AddPage()
	return d
}

// statusWord is the status as printed: DRAFT or FINAL.
func statusWord(st statement.Status) string {
	switch st {
	case statement.Final:
		return "FINAL"
	case statement.Draft:
		return "DRAFT"
	}
	return "STATUS " + string(st)
}

func (d *doc) setText(c rgb) { d.f.SetTextColor(c.r, c.g, c.b) }
func (d *doc) setFill(c rgb) { d.f.SetFillColor(c.r, c.g, c.b) }
func (d *doc) setDraw(c rgb) { d.f.SetDrawColor(c.r, c.g, c.b) }

// font selects a family ("go" or "gomono"), style ("" or "B") and size in
// points.
func (d *doc) font(family, style string, size float64) { d.f.SetFont(family, style, size) }

// newPage starts a page and leaves the cursor below its running header.
func (d *doc) newPage() {
	d.f.AddPage()
	d.f.SetY(marginTop + 8)
}

// ensure starts a new page unless h millimetres fit above the footer.
func (d *doc) ensure(h float64) {
	if d.f.GetY()+h > bodyBottom {
		d.newPage()
	}
}

// text writes s (made printable) in a cell of width w and height h, shrinking
// the font until it fits so that nothing overlaps its neighbour. align is
// fpdf's: "L", "C", "R" (plus "M" for the vertical middle).
func (d *doc) text(w, h float64, s, align string, fill bool) {
	s = printable(s)
	size, _ := d.f.GetFontSize()
	avail := w - 2*d.f.GetCellMargin()
	fit := size
	for fit > 2 && d.f.GetStringWidth(s) > avail {
		fit -= 0.25
		d.f.SetFontSize(fit)
	}
	d.f.CellFormat(w, h, s, "", 0, align, fill, 0, "")
	if fit != size {
		d.f.SetFontSize(size)
	}
}

// heading writes a section heading, on a new page when it and need more
// millimetres (its first rows) would not fit.
func (d *doc) heading(title string, need float64) {
	d.ensure(9 + need)
	d.f.Ln(3)
	d.font(familySans, "B", 11.5)
	d.setText(colText)
	d.f.SetX(marginX)
	d.text(contentW, 6, title, "LM", false)
	d.f.Ln(6.5)
}

// note writes a paragraph of small muted text across the page.
func (d *doc) note(s string) {
	d.font(familySans, "", 7.5)
	s = printable(s)
	d.ensure(float64(len(d.f.SplitText(s, contentW))) * 3.4)
	d.setText(colMuted)
	d.f.SetX(marginX)
	d.f.MultiCell(contentW, 3.4, s, "", "L", false)
	d.setText(colText)
	d.f.Ln(1)
}

// clip returns s, or as many of its first runes as fit in w millimetres in
// the current font followed by "…".
func (d *doc) clip(s string, w float64) string {
	if d.f.GetStringWidth(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && d.f.GetStringWidth(string(r)+"…") > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// pageFurniture writes, once every page exists, the running header of the
// pages after the first and every page's footer with "page n of m".
func (d *doc) pageFurniture() {
	n := d.f.PageCount()
	d.font(familySans, "", 7.5)
	head := fmt.Sprintf(" · %s · %s · statement revision %d", d.s.Month, statusWord(d.s.Status), d.s.Revision)
	head = d.clip(printable(d.s.AgencyID), contentW-2*d.f.GetCellMargin()-d.f.GetStringWidth(head)) + head
	foot := "reportjob monthly statement · job " + d.s.Job
	for p := 1; p <= n; p++ {
		d.f.SetPage(p)
		d.setDraw(colRule)
		if p > 1 {
			d.font(familySans, "", 7.5)
			d.setText(colMuted)
			d.f.SetXY(marginX, marginTop-2)
			d.text(contentW, 5, head, "LM", false)
			d.f.Line(marginX, marginTop+3.5, pageW-marginX, marginTop+3.5)
		}
		d.font(familySans, "", 7.5)
		d.setText(colMuted)
		d.f.Line(marginX, footerY-1.5, pageW-marginX, footerY-1.5)
		d.f.SetXY(marginX, footerY)
		d.text(contentW*0.7, 4, foot, "LM", false)
		d.f.SetXY(marginX+contentW*0.7, footerY)
		d.text(contentW*0.3, 4, fmt.Sprintf("page %d of %d", p, n), "RM", false)
	}
	d.setText(colText)
}

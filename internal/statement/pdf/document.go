package pdf

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/go-pdf/fpdf"

	"github.com/reportjob/reportjob/internal/locale"
	"github.com/reportjob/reportjob/internal/statement"
)

// Renderer renders statements with the configured fonts
// (statements.fonts) besides the embedded Go fonts.
type Renderer struct {
	extras []*extraFont
}

// NewRenderer returns a Renderer that prints a rune the Go fonts lack with
// the first of fonts (paths of TrueType .ttf files) that has it. Each file
// is read once per process; a font with CFF outlines (.otf), a collection
// (.ttc) or a file that is not a font is an ErrFont naming it.
func NewRenderer(fonts []string) (*Renderer, error) {
	if err := glyphs.load(); err != nil {
		return nil, err
	}
	r := &Renderer{}
	for _, p := range fonts {
		e, err := loadExtraFont(p)
		if err != nil {
			return nil, err
		}
		r.extras = append(r.extras, e)
	}
	return r, nil
}

// sheet is one statement document (a statement with a Doc.Number) being
// laid out.
type sheet struct {
	f      *fpdf.Fpdf
	s      *statement.Agency
	l      *locale.Locale
	month  time.Time
	zone   *time.Location
	extras []*extraFont
	added  []bool
	// The current font as requested: family, style, size in points.
	family, style string
	size          float64
	// furnishing: the running header and footer are being written
	// (below bodyBottom by design).
	furnishing bool
	// memo keeps layouts for the next documents; events, while one is
	// computed, its font events (see layoutMemo).
	memo   *layoutMemo
	events *[]fontEvent
	// pieces is runs' result, reused; units, cell's widths of runs.
	pieces []piece
	units  []int
	// auto: a line's direction is that of its first strong character (a
	// party's name and address), else left to right (see visual).
	auto bool
	// set is the font fpdf has (apply).
	set struct {
		family, style string
		size          float64
	}
}

// Render writes s as a PDF to w: a statement without a Doc.Number (from
// before version 4) exactly as it was published, one with a Doc as the
// document of docs/statements.md.
func (r *Renderer) Render(w io.Writer, s *statement.Agency) error {
	if s == nil {
		return fmt.Errorf("render statement pdf: nil statement: %w", ErrBadStatement)
	}
	month, err := time.Parse("2006-01", s.Month)
	if err != nil {
		return fmt.Errorf("render statement pdf: month %q is not YYYY-MM: %w", s.Month, ErrBadStatement)
	}
	if err := glyphs.load(); err != nil {
		return fmt.Errorf("render statement pdf: %w", err)
	}
	if s.Doc.Number == "" {
		return renderLegacy(w, s, month)
	}
	fonts, err := loadDocFonts()
	if err != nil {
		return fmt.Errorf("render statement pdf: %w", err)
	}
	return newSheet(s, month, fonts, r.extras).render(w)
}

// render lays the document out and writes it to w.
func (d *sheet) render(w io.Writer) error {
	d.page1()
	d.chart()
	d.days()
	d.adjustments()
	d.appendix()
	d.furniture()
	s := d.s
	if err := d.f.Error(); err != nil {
		return fmt.Errorf("render statement pdf for agency %q month %s: %w", s.AgencyID, s.Month, err)
	}
	if err := d.f.Output(w); err != nil {
		return fmt.Errorf("write statement pdf for agency %q month %s: %w", s.AgencyID, s.Month, err)
	}
	return nil
}

func newSheet(s *statement.Agency, month time.Time, fonts []docFont, extras []*extraFont) *sheet {
	l := locale.ForDocument(s.Doc.Locale)
	if !wordable(l, s.Month, extras) {
		l = locale.English()
	}
	zone, err := loadZone(orUTC(s.Zone))
	if err != nil {
		zone = time.UTC
	}
	f := fpdf.New("P", "mm", "A4", "")
	for _, ff := range fonts {
		f.AddUTF8FontFromBytesSum(ff.family, ff.style, ff.ttf, ff.sum) // shared: fpdf only reads them
	}
	mono := fontFiles[2]
	f.AddUTF8FontFromBytesSum(mono.family, mono.style, mono.ttf, mono.sum)
	f.SetCreationDate(month)
	f.SetModificationDate(month)
	f.SetCatalogSort(true)
	f.SetCompression(true)
	f.SetProducer("reportjob", false)
	f.SetCreator("reportjob", false)
	f.SetMargins(marginX, marginTop, marginX)
	f.SetAutoPageBreak(false, 0)
	f.SetCellMargin(cellMargin)
	f.SetLineWidth(0.2)
	d := &sheet{f: f, s: s, l: l, month: month, zone: zone, extras: extras, added: make([]bool, len(extras)),
		memo: memoFor(extras)}
	// The title in the document's own words; PDF metadata is UTF-16, any
	// script prints in a viewer's title bar.
	f.SetTitle(prep(fmt.Sprintf("%s %s · %s · %s", l.T("doc.title"), s.Doc.Number, d.name(s.Doc.Recipient.LegalName), l.Month(s.Month))), true)
	f.SetSubject(prep(l.T("doc.title")+" · "+s.Doc.Issuer.LegalName), true)
	d.text(colText)
	d.font(familyDoc, "", 9)
	f.AddPage()
	return d
}

// zones are the time zones loaded, by name: a *time.Location is only read
// once loaded, and there are as many as the zone database has names
// (a name it lacks is not kept).
var zones sync.Map // string -> *time.Location

// loadZone is time.LoadLocation(name), which reads and parses the zone's
// file each time, once per process and zone.
func loadZone(name string) (*time.Location, error) {
	if z, ok := zones.Load(name); ok {
		return z.(*time.Location), nil
	}
	z, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, z)
	return z, nil
}

// name is a party's name as printed: the agency id when the name is
// empty or needs shaping (see needsShaping).
func (d *sheet) name(n string) string {
	if strings.TrimSpace(n) == "" || d.unprintable(n) {
		return d.s.AgencyID
	}
	return n
}

// tn is the catalog's plural text for key and n ({n} filled in).
func (d *sheet) tn(key string, n int, args ...string) string { return d.l.TN(key, int64(n), args...) }

func (d *sheet) text(c rgb) { d.f.SetTextColor(c.r, c.g, c.b) }
func (d *sheet) fill(c rgb) { d.f.SetFillColor(c.r, c.g, c.b) }
func (d *sheet) draw(c rgb) { d.f.SetDrawColor(c.r, c.g, c.b) }

// newPage starts a page and leaves the cursor below its running header.
func (d *sheet) newPage() {
	d.f.AddPage()
	d.f.SetY(marginTop + 8)
}

// ensure starts a new page unless h millimetres fit above the footer.
func (d *sheet) ensure(h float64) {
	if d.f.GetY()+h > bodyBottom {
		d.newPage()
	}
}

// heading writes a section heading, on a new page when it and need more
// millimetres would not fit.
func (d *sheet) heading(title string, need float64) {
	d.ensure(9 + need)
	d.f.Ln(3)
	d.font(familyDoc, "B", 11.5)
	d.text(colText)
	d.f.SetX(marginX)
	d.cell(contentW, 6, title, "L", false)
	d.f.Ln(6.5)
}

// note writes a paragraph of small muted text across the page.
func (d *sheet) note(s string) {
	d.font(familyDoc, "", 7.5)
	d.ensure(float64(len(d.wrap(s, contentW-2*cellMargin))) * 3.4)
	d.text(colMuted)
	d.f.SetX(marginX)
	d.para(marginX, contentW, 3.4, s)
	d.text(colText)
	d.f.Ln(1)
}

// statusWord is the stamp: the catalog's word for draft or final.
func (d *sheet) statusWord() string {
	if d.s.Status == statement.Final {
		return d.l.T("doc.final")
	}
	return d.l.T("doc.draft")
}

// furniture writes, once every page exists, the running header of the
// pages after the first and every page's footer with its number.
func (d *sheet) furniture() {
	n := d.f.PageCount()
	doc := d.s.Doc
	head := doc.Number + " · " + d.name(doc.Recipient.LegalName) + " · " + d.l.Month(d.s.Month) + " · " + d.statusWord()
	iss := d.issuerName()
	foot := d.l.T("doc.title") + " " + doc.Number
	d.furnishing = true
	defer func() { d.furnishing = false }()
	for p := 1; p <= n; p++ {
		d.f.SetPage(p)
		d.set.family = "" // the page's content stream has its own last font
		d.draw(colRule)
		d.text(colMuted)
		d.font(familyDoc, "", 7.5)
		if p == 2 && iss != "" {
			head = d.headWith(iss, head)
		}
		if p > 1 {
			d.f.SetXY(marginX, marginTop-2)
			d.cell(contentW, 5, head, "L", false)
			d.f.Line(marginX, marginTop+3.5, pageW-marginX, marginTop+3.5)
		}
		d.f.Line(marginX, footerY-1.5, pageW-marginX, footerY-1.5)
		d.f.SetXY(marginX, footerY)
		d.cell(contentW*0.7, 4, foot, "L", false)
		d.cell(contentW*0.3, 4, d.l.T("page", "n", d.l.Int(int64(p)), "total", d.l.Int(int64(n))), "R", false)
	}
	d.text(colText)
}

// headWith is the running header: the issuer's name, then head. A long
// name (past 60 characters) is cut with an ellipsis so that the header
// fits the page in the current font, never shrunk to unreadable.
func (d *sheet) headWith(iss, head string) string {
	r := []rune(iss)
	if len(r) <= 60 {
		return iss + " · " + head
	}
	avail := contentW - 2*cellMargin
	for n := len(r); n > 1; n-- {
		name := string(r[:n])
		if n < len(r) {
			name = strings.TrimRight(name, " ") + "…"
		}
		if d.widthOf(d.runs(name+" · "+head)) <= avail {
			return name + " · " + head
		}
	}
	return head
}

// wordable reports whether the fonts of the document (the embedded ones
// and extras, statements.fonts) can print l's wording: its title and the
// statement's month name. A locale they cannot (ja without a configured
// CJK font) is written in English instead, never in boxes; its numbers
// keep the same digits (docs/statements.md, Fonts and scripts).
func wordable(l *locale.Locale, month string, extras []*extraFont) bool {
	for _, r := range l.T("doc.title") + l.T("doc.issue_date") + l.Month(month) {
		if glyphs.has(r) || unicode.IsSpace(r) {
			continue
		}
		if !slices.ContainsFunc(extras, func(e *extraFont) bool { return e.has(r) }) {
			return false
		}
	}
	return true
}

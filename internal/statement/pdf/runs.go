package pdf

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A document's text is written in runs: maximal pieces of a string that
// one font prints. A rune goes to the Go fonts when they have it, else to
// the first configured font that has it, else it prints as Replacement in
// the Go fonts.

// piece is a piece of text and the font that prints it: -1 the current Go
// family and style, i >= 0 the i-th configured font.
type piece struct {
	font int
	text string
}

// needsShaping reports whether r belongs to a script whose letters change
// shape with their neighbours or are written right to left (Arabic,
// Hebrew, the Indic scripts, ...): the PDF writer places one glyph per
// rune left to right, which would print them wrong. Text with such a rune
// falls back as docs/statements.md says (the agency id instead of a name,
// an address line left out), never as wrong or missing glyphs; but Hebrew
// letters, which do not join, print in visual order (rtl.go).
func needsShaping(r rune) bool {
	return r >= 0x0590 && unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko,
		unicode.Samaritan, unicode.Mandaic, unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati,
		unicode.Oriya, unicode.Tamil, unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala,
		unicode.Thai, unicode.Lao, unicode.Tibetan, unicode.Myanmar, unicode.Khmer, unicode.Mongolian)
}

// prep is s composed (NFC) with white space as spaces, invisible format
// characters left out, and every control character and invalid byte as
// Replacement.
func prep(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	s = norm.NFC.String(s)
	if !needsPrep(s) {
		return s // what the loop below would build again, rune by rune
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case invisible(r):
			// Invisible: format characters (zero-width space and joiners,
			// bidi controls, soft hyphen) and variation selectors.
		case r == utf8.RuneError || unicode.IsControl(r):
			b.WriteRune(Replacement)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// invisible reports whether prep leaves r out.
func invisible(r rune) bool { return unicode.Is(unicode.Cf, r) || r >= 0xFE00 && r <= 0xFE0F }

// needsPrep reports whether prep's loop changes s: a rune it replaces or
// leaves out (U+FFFD, which it writes as itself, counts too).
func needsPrep(s string) bool {
	for _, r := range s {
		if r < 0x20 || r >= 0x7F && (r == utf8.RuneError || unicode.IsControl(r) || invisible(r)) {
			return true
		}
	}
	return false
}

// runs splits s (prepared) into runs by font. A run's text is a piece of
// s itself unless a rune of it is printed as Replacement. The slice is
// the sheet's: valid until the next call.
func (d *sheet) runs(s string) []piece {
	out := d.pieces[:0]
	if goASCII(s) {
		// What the loop below gives for printable ASCII the Go fonts
		// have (prep and visual return it as it is): one run, s.
		if s != "" {
			out = append(out, piece{-1, s})
		}
		d.pieces = out
		return out
	}
	s = visual(prep(s), d.auto)
	cur, start := -1, 0
	var rep []byte // the current run when a rune of it was replaced, else nil (s[start:i])
	for i, r := range s {
		font, pr := -1, r
		if needsShaping(r) && !hebrewLetter(r) {
			pr = Replacement // never drawn unshaped (an agency id in such a script)
		}
		if !glyphs.has(pr) {
			font = -2
			for i, e := range d.extras {
				if e.has(pr) {
					font = i
					break
				}
			}
			if font == -2 {
				font, pr = -1, Replacement
			}
		}
		if font != cur && i > start {
			out = append(out, runPiece(cur, s[start:i], rep))
			start, rep = i, nil
		}
		cur = font
		if rep == nil && (pr != r || r == utf8.RuneError) {
			rep = append(make([]byte, 0, len(s)-start+3), s[start:i]...)
		}
		if rep != nil {
			rep = utf8.AppendRune(rep, pr)
		}
	}
	if len(s) > start {
		out = append(out, runPiece(cur, s[start:], rep))
	}
	d.pieces = out
	return out
}

// goASCII reports whether s is printable ASCII the Go fonts have.
func goASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || !glyphs.has(rune(c)) {
			return false
		}
	}
	return true
}

// runPiece is the run of font whose text is rep, or text when rep is nil.
func runPiece(font int, text string, rep []byte) piece {
	if rep != nil {
		text = string(rep)
	}
	return piece{font, text}
}

// use selects the font of a run in the current family, style and size.
func (d *sheet) use(r piece) {
	if r.font < 0 {
		d.apply(d.family, d.style, d.size)
		return
	}
	d.embed(r.font)
	d.apply(extraFamily(r.font), "", d.size)
}

// embed adds the i-th configured font to the document unless it has it.
func (d *sheet) embed(i int) {
	d.record(fontEvent{extra: i})
	if !d.added[i] {
		// Only a document whose text needs the font embeds it (a subset).
		// The process's one copy of its bytes (6 MB for IPA Gothic): the
		// patched fpdf only reads them while it cuts the subset.
		e := d.extras[i]
		d.f.AddUTF8FontFromBytesSum(extraFamily(i), "", e.ttf, e.sum)
		d.added[i] = true
	}
}

// extraFamily is the family name of the i-th configured font.
func extraFamily(i int) string { return "x" + strconv.Itoa(i) }

// apply sets fpdf's font unless it is already that one: every SetFont
// writes an operator into the page.
func (d *sheet) apply(family, style string, size float64) {
	d.record(fontEvent{extra: -1, family: family, style: style, size: size})
	if d.set.family == family && d.set.style == style && d.set.size == size {
		return
	}
	if d.set.family == family && d.set.style == style && size != 0 && !d.f.Err() {
		// Only the size changes: SetFontSize writes SetFont's operator
		// and sets what it would (the family's font stays fpdf's
		// current one), without looking the font up again.
		d.set.size = size
		d.f.SetFontSize(size)
		return
	}
	d.set.family, d.set.style, d.set.size = family, style, size
	d.f.SetFont(family, style, size)
}

// font selects the family, style and size of what follows.
func (d *sheet) font(family, style string, size float64) {
	d.family, d.style, d.size = family, style, size
	d.apply(family, style, size)
}

// widthOf is the width of rs in millimetres at the current size.
func (d *sheet) widthOf(rs []piece) float64 {
	w := 0.0
	for _, r := range rs {
		d.use(r)
		w += d.f.GetStringWidth(r.text)
	}
	return w
}

// widthAt is widthOf(rs) for runs of units[i] glyph units each; with rs
// nil, their width in the current font size, the runs' fonts already
// selected (only the size differs between them).
func (d *sheet) widthAt(rs []piece, units []int) float64 {
	w := 0.0
	for i, u := range units {
		if rs != nil {
			d.use(rs[i])
		}
		if !d.f.Err() { // GetStringWidth's 0 otherwise
			_, size := d.f.GetFontSize()
			w += float64(u) * size / 1000
		}
	}
	return w
}

// cell writes s in a cell of width w and height h at the cursor, shrinking
// the font until it fits, and moves the cursor to the cell's right. align
// is "L", "C" or "R".
func (d *sheet) cell(w, h float64, s, align string, fill bool) {
	x, y := d.f.GetXY()
	if fill {
		d.f.Rect(x, y, w, h, "F")
	}
	rs := d.runs(s)
	size := d.size
	avail := w - 2*cellMargin
	// widthOf(rs), keeping each run's width in glyph units, which is the
	// same at every size: a smaller size scales it as GetStringWidth
	// does instead of reading the text again.
	units := d.units[:0]
	for _, r := range rs {
		d.use(r)
		units = append(units, d.f.GetStringSymbolWidth(r.text))
	}
	d.units = units
	tw := d.widthAt(nil, units)
	for d.size > 2 && tw > avail {
		d.size -= 0.25
		tw = d.widthAt(rs, units)
	}
	d.put(x, y, w, h, rs, tw, align)
	d.size = size
	d.f.SetXY(x+w, y)
}

// cellMargin is the space left and right of a cell's text, in millimetres.
const cellMargin = 1.2

// drawnBelow, when set (by tests), is called for every text drawn below
// bodyBottom outside the running header and footer: never, as every block
// breaks onto a new page when it does not fit.
var drawnBelow func(page int, baseline float64, rs []piece)

// put draws rs, tw wide, in the box (x, y, w, h), vertically centred.
func (d *sheet) put(x, y, w, h float64, rs []piece, tw float64, align string) {
	tx := x + cellMargin
	switch align {
	case "R":
		tx = x + w - cellMargin - tw
	case "C":
		tx = x + (w-tw)/2
	}
	base := y + h/2 + 0.3*d.size/d.f.GetConversionRatio()
	if drawnBelow != nil && !d.furnishing && base > bodyBottom {
		drawnBelow(d.f.PageNo(), base, rs)
	}
	for i, r := range rs {
		d.use(r)
		d.f.Text(tx, base, r.text)
		if i < len(rs)-1 {
			tx += d.f.GetStringWidth(r.text)
		}
	}
}

// para writes s from the left margin x, wrapped at width w, lineH per
// line, and leaves the cursor at x below it.
func (d *sheet) para(x, w, lineH float64, s string) {
	for _, line := range d.wrap(s, w-2*cellMargin) {
		d.ensure(lineH)
		d.f.SetXY(x, d.f.GetY())
		d.cell(w, lineH, line, "L", false)
		d.f.Ln(lineH)
	}
	d.f.SetX(x)
}

// noLineStart are the characters a Japanese or Chinese line does not
// start with (closing brackets and punctuation, small kana: kinsoku).
const noLineStart = "、。，．・：；？！）］｝〕〉》」』】〙〗〟’”ゝゞーァィゥェォッャュョヮヵヶぁぃぅぇぉっゃゅょゎゕゖ々〻"

// wrap breaks s into lines of at most w millimetres: at spaces, and
// between any two ideographs or kana (which are not separated by spaces).
// The lines are read only (memoized: see layoutMemo).
func (d *sheet) wrap(s string, w float64) []string {
	k := layoutKey{kind: kindWrap, family: d.family, style: d.style, size: d.size, w: w, auto: d.auto, text: s}
	lines, _ := d.memoized(k, func() ([]string, float64) { return d.wrapText(s, w), 0 })
	return lines
}

// wrapText is wrap without the memo.
func (d *sheet) wrapText(s string, w float64) []string {
	s = prep(s)
	if d.widthOf(d.runs(s)) <= w {
		return []string{s}
	}
	var tokens []string
	start := 0
	for i, r := range s {
		switch {
		case r == ' ':
			tokens = append(tokens, s[start:i+1])
			start = i + 1
		case r >= 0x2E80 && i > start && !strings.ContainsRune(noLineStart, r):
			tokens = append(tokens, s[start:i])
			start = i
		}
	}
	tokens = append(tokens, s[start:])
	var lines []string
	line := ""
	for _, t := range tokens {
		if line != "" && d.widthOf(d.runs(strings.TrimRight(line+t, " "))) > w {
			lines = append(lines, strings.TrimRight(line, " "))
			line = ""
		}
		line += t
	}
	if line = strings.TrimRight(line, " "); line != "" {
		lines = append(lines, line)
	}
	return lines
}

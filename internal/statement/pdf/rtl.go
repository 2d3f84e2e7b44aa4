package pdf

import (
	"slices"
	"strings"
	"unicode"
)

// Hebrew is written right to left and its letters do not join: a line
// prints correctly when its Hebrew runs are laid out in visual order
// (visual) with a font that has the letters (statements.fonts, e.g.
// DejaVu Sans). Hebrew points and cantillation marks (which need
// positioning) and every other script that needs shaping still fall back
// (needsShaping).

// hebrewLetter reports whether r is a Hebrew letter or punctuation mark
// that prints as a glyph of its own (not a point or mark).
func hebrewLetter(r rune) bool {
	return r >= 0x05D0 && r <= 0x05EA || r >= 0x05EF && r <= 0x05F4 || r == 0x05BE || r == 0x05C0 || r == 0x05C3 || r == 0x05C6
}

// unprintable reports whether s has a rune that needs shaping and cannot
// be printed: any such rune but a Hebrew letter a font of the document
// has. The caller falls back (docs/statements.md).
func (d *sheet) unprintable(s string) bool {
	for _, r := range s {
		if !needsShaping(r) {
			continue
		}
		if !hebrewLetter(r) || !d.extraHas(r) {
			return true
		}
	}
	return false
}

// extraHas reports whether a configured font has r.
func (d *sheet) extraHas(r rune) bool {
	for _, e := range d.extras {
		if e.has(r) {
			return true
		}
	}
	return false
}

// visual returns the line s in the order its characters are drawn left to
// right: with auto, a line whose first strong character is Hebrew reads
// right to left (its runs in reverse order; a name or an address line),
// without, every line reads left to right (a sentence of the catalogs with
// a name in it); every Hebrew run's characters are reversed
// (brackets mirrored), and numbers and Latin text keep their own order. A
// neutral run (spaces, punctuation) between two runs of one direction takes
// it, otherwise the line's. s without Hebrew is returned as is.
func visual(s string, auto bool) string {
	// A Hebrew letter's UTF-8 starts with 0xD6 (U+05BE) or 0xD7.
	if strings.IndexByte(s, 0xD7) < 0 && strings.IndexByte(s, 0xD6) < 0 || !strings.ContainsFunc(s, hebrewLetter) {
		return s
	}
	type span struct {
		rtl  int // 1 right to left, 0 left to right, -1 neutral
		text []rune
	}
	var spans []span
	lineRTL := -1
	for _, r := range s {
		dir := -1
		switch {
		case hebrewLetter(r):
			dir = 1
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			dir = 0
		}
		if lineRTL < 0 && dir >= 0 && !unicode.IsDigit(r) && auto {
			lineRTL = dir
		}
		if n := len(spans); n > 0 && spans[n-1].rtl == dir {
			spans[n-1].text = append(spans[n-1].text, r)
			continue
		}
		spans = append(spans, span{dir, []rune{r}})
	}
	if lineRTL < 0 {
		lineRTL = 0
	}
	for i := range spans {
		if spans[i].rtl >= 0 {
			continue
		}
		spans[i].rtl = lineRTL
		if i > 0 && i+1 < len(spans) && spans[i-1].rtl == spans[i+1].rtl {
			spans[i].rtl = spans[i-1].rtl
		}
	}
	// Merge neighbours of one direction, then order.
	var runs []span
	for _, sp := range spans {
		if n := len(runs); n > 0 && runs[n-1].rtl == sp.rtl {
			runs[n-1].text = append(runs[n-1].text, sp.text...)
			continue
		}
		runs = append(runs, sp)
	}
	if lineRTL == 1 {
		slices.Reverse(runs)
	}
	var b strings.Builder
	for _, r := range runs {
		if r.rtl == 1 {
			slices.Reverse(r.text)
			for i, c := range r.text {
				r.text[i] = mirror(c)
			}
		}
		b.WriteString(string(r.text))
	}
	return b.String()
}

// mirror is the glyph a bracket shows in right-to-left text.
func mirror(r rune) rune {
	if i := strings.IndexRune("()[]{}<>«»", r); i >= 0 {
		return []rune(")(][}{><»«")[i]
	}
	return r
}

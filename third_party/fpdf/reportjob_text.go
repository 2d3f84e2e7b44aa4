package fpdf

// [reportjob patch] Text and the font operator without fmt.
//
// Text (a UTF-8 font, left to right, neither underlined nor struck out)
// and SetFont wrote their operators with fmt.Sprintf, converted the text
// to UTF-16 and escaped it in five passes, each a new string, and
// stored every rune of the text in the font's used runes: a fifth of a
// statement's CPU. Here they append the same bytes to one reused buffer
// (%.2f of a finite number is strconv's 'f' with 2 digits; a number that
// is not finite takes upstream's path) and store a rune only when the map
// does not have it yet with its own value (the map starts with runes 0 to
// 31 or 56 mapped to 0); a rune below U+0800 that it has is found in a
// bitset first (fontDefType.runeSeen: the map never drops a rune but 0,
// which putfonts deletes and the bitset never holds).

import "math"

// finite reports whether v is neither infinite nor NaN.
func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// textUTF8 is Text for a UTF-8 font, !isRTL, !underline, !strikeout, at
// finite coordinates in points (the caller checks all of these).
func (f *Fpdf) textUTF8(px, py float64, txtStr string) {
	f.markUsed(txtStr)
	b := f.fmt.buf[:0]
	if f.colorFlag {
		b = append(b, "q "...)
		b = append(b, f.color.text.str...)
		b = append(b, ' ')
	}
	b = append(b, "BT "...)
	b = appendFixed(b, px, 2)
	b = append(b, ' ')
	b = appendFixed(b, py, 2)
	b = append(b, " Td ("...)
	b = appendUTF16Escaped(b, txtStr)
	b = append(b, ") Tj ET"...)
	if f.colorFlag {
		b = append(b, " Q"...)
	}
	b = append(b, '\n')
	f.fmt.buf = b
	f.outBytes(b)
}

// markUsed does usedRunes[r] = r for every rune r of s (the current
// font's), skipping what the map already has.
func (f *Fpdf) markUsed(s string) {
	used, seen := f.currentFont.usedRunes, f.currentFont.runeSeen
	for _, uni := range s {
		small := seen != nil && uni > 0 && uni < 0x800
		if small && seen[uni>>6]&(1<<(uni&63)) != 0 {
			continue
		}
		if v, ok := used[int(uni)]; !ok || v != int(uni) {
			used[int(uni)] = int(uni)
		}
		if small {
			seen[uni>>6] |= 1 << (uni & 63)
		}
	}
}

// outBytes writes b as it is (out adds a newline).
func (f *Fpdf) outBytes(b []byte) {
	if f.state == 2 {
		must(f.pages[f.page].Write(b))
	} else {
		must(f.buffer.Write(b))
	}
}

// outFontOp writes the operator that selects the current font and size:
// upstream's f.outf("BT /F%s %.2f Tf ET", f.currentFont.i, f.fontSizePt).
func (f *Fpdf) outFontOp() {
	if !finite(f.fontSizePt) {
		f.outf("BT /F%s %.2f Tf ET", f.currentFont.i, f.fontSizePt)
		return
	}
	b := append(f.fmt.buf[:0], "BT /F"...)
	b = append(b, f.currentFont.i...)
	b = append(b, ' ')
	b = appendFixed(b, f.fontSizePt, 2)
	b = append(b, " Tf ET\n"...)
	f.fmt.buf = b
	f.outBytes(b)
}

// appendUTF16Escaped appends f.escape(utf8toutf16(s, false)): the same
// conversion (upstream's, which takes a 4-byte sequence's first three
// bytes for a 3-byte one), then each of its bytes escaped as escape's
// replacements do (they never touch what an earlier one wrote: \ to \\,
// ( to \(, ) to \), CR to \r).
func appendUTF16Escaped(b []byte, s string) []byte {
	nb := len(s)
	i := 0
	for i < nb {
		c1 := s[i]
		i++
		switch {
		case c1 >= 224:
			c2 := s[i]
			i++
			c3 := s[i]
			i++
			b = appendEscaped(b, ((c1&0x0F)<<4)+((c2&0x3C)>>2))
			b = appendEscaped(b, ((c2&0x03)<<6)+(c3&0x3F))
		case c1 >= 192:
			c2 := s[i]
			i++
			b = appendEscaped(b, (c1&0x1C)>>2)
			b = appendEscaped(b, ((c1&0x03)<<6)+(c2&0x3F))
		default:
			b = append(b, 0)
			b = appendEscaped(b, c1)
		}
	}
	return b
}

// appendEscaped appends c as escape writes it.
func appendEscaped(b []byte, c byte) []byte {
	switch c {
	case '\\', '(', ')':
		return append(b, '\\', c)
	case '\r':
		return append(b, '\\', 'r')
	}
	return append(b, c)
}

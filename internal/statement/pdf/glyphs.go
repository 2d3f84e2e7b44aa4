package pdf

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/text/unicode/norm"
)

// Replacement is the rune printed in place of one the embedded fonts have
// no glyph for (a CJK ideograph, an emoji, a control character): U+FFFD,
// which the Go fonts draw as a diamond with a question mark.
const Replacement = '\uFFFD'

// The embedded fonts: the Go fonts (BSD licence, golang.org/x/image/font/gofont),
// which cover Latin (with accents), Greek and Cyrillic.
const (
	familySans = "go"
	familyMono = "gomono"
)

var fontFiles = []struct {
	family, style string
	ttf           []byte
	sum           [sha256.Size]byte // of ttf, for fpdf's per-font memos
}{
	{familySans, "", goregular.TTF, sha256.Sum256(goregular.TTF)},
	{familySans, "B", gobold.TTF, sha256.Sum256(gobold.TTF)},
	{familyMono, "", gomono.TTF, sha256.Sum256(gomono.TTF)},
}

// glyphSet is the set of runes every embedded font has a glyph for.
type glyphSet struct {
	once sync.Once
	err  error
	// bits has bit r set when r is in the set (the Basic Multilingual
	// Plane: the Go fonts map nothing above it). A bit test, not a map:
	// every rune of every text is looked up.
	bits []uint64
}

// has reports whether every embedded font has a glyph for r.
func (g *glyphSet) has(r rune) bool {
	return r >= 0 && r <= 0xFFFF && g.bits[r>>6]&(1<<(uint(r)&63)) != 0
}

var glyphs glyphSet

// load reads the cmap of every embedded font once: a rune is printable
// when all of them map it to a glyph other than .notdef (index 0).
func (g *glyphSet) load() error {
	g.once.Do(func() {
		g.bits = make([]uint64, 0x10000/64)
		var buf sfnt.Buffer
		for i, ff := range fontFiles {
			f, err := sfnt.Parse(ff.ttf)
			if err != nil {
				g.err = fmt.Errorf("parse embedded font %s %q: %w", ff.family, ff.style, err)
				return
			}
			// The Go fonts map nothing above the Basic Multilingual Plane.
			for r := rune(0x20); r <= 0xFFFF; r++ {
				if i > 0 && !g.has(r) {
					continue
				}
				idx, err := f.GlyphIndex(&buf, r)
				ok := err == nil && idx != 0
				if i == 0 && ok {
					g.bits[r>>6] |= 1 << (uint(r) & 63)
				} else if !ok {
					g.bits[r>>6] &^= 1 << (uint(r) & 63)
				}
			}
		}
	})
	return g.err
}

// printable returns s ready to write with the embedded fonts: composed
// (NFC, so that "e" + U+0301 becomes the one glyph "é"), with every rune
// the fonts lack, every control character and every invalid UTF-8 byte
// replaced by Replacement, one for one. It never fails: any string prints.
func printable(s string) string {
	same := true // printable ASCII the fonts have: the loop below gives s again
	for i := 0; i < len(s) && same; i++ {
		same = s[i] >= 0x20 && s[i] < 0x7F && glyphs.has(rune(s[i]))
	}
	if same {
		return s
	}
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case unicode.IsControl(r) || !glyphs.has(r):
			b.WriteRune(Replacement)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

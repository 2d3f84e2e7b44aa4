package pdf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
)

// ErrFont is returned by NewRenderer for a configured font it cannot use.
var ErrFont = errors.New("statement font unusable")

// A document (a statement with a Doc.Number) prints with the Go fonts
// whose hyphen is the font's own short one (docFonts), the Go Mono font
// for digests, and, per rune the Go fonts lack, the first configured font
// (statements.fonts) that has it.
const (
	familyDoc = "goh" // Go Regular and Bold with the short hyphen
)

// docFont is one embedded font of a document.
type docFont struct {
	family, style string
	ttf           []byte
	sum           [sha256.Size]byte
}

var (
	docFontsOnce sync.Once
	docFonts     []docFont
	docFontsErr  error
)

// loadDocFonts derives, once per process, the Go Regular and Bold fonts a
// document prints with: the Go fonts draw U+002D HYPHEN-MINUS with their
// minus sign's glyph (as wide as a digit: "agency−0001" looks like a minus
// sign, although its text is a hyphen), and their soft hyphen (U+00AD)
// with a proper short hyphen. shortHyphen copies the latter's outline and
// metrics over the former's, so that a hyphen looks like one and still
// reads as U+002D (the text of the PDF is not changed). Statements without
// a Doc keep the fonts they were published with (same bytes).
func loadDocFonts() ([]docFont, error) {
	docFontsOnce.Do(func() {
		for _, f := range []struct {
			style string
			ttf   []byte
		}{{"", goregular.TTF}, {"B", gobold.TTF}} {
			b, err := shortHyphen(f.ttf)
			if err != nil {
				docFontsErr = fmt.Errorf("derive the Go font %q with a short hyphen: %w", f.style, err)
				return
			}
			docFonts = append(docFonts, docFont{familyDoc, f.style, b, sha256.Sum256(b)})
		}
	})
	return docFonts, docFontsErr
}

// shortHyphen returns a copy of the TrueType font ttf in which the glyph
// of U+002D has the outline and horizontal metrics of the glyph of U+00AD
// (the glyph data is copied into the hyphen's slot, padded with zeros, so
// no offset moves). It fails when the tables are not as in the Go fonts.
func shortHyphen(ttf []byte) ([]byte, error) {
	f, err := sfnt.Parse(ttf)
	if err != nil {
		return nil, err
	}
	var buf sfnt.Buffer
	hy, err1 := f.GlyphIndex(&buf, '-')
	soft, err2 := f.GlyphIndex(&buf, '\u00AD')
	if err := errors.Join(err1, err2); err != nil || hy == 0 || soft == 0 {
		return nil, fmt.Errorf("no hyphen or soft hyphen glyph: %w", errors.Join(err, ErrFont))
	}
	out := bytes.Clone(ttf)
	be := binary.BigEndian
	tables := map[string][]byte{}
	if len(out) < 12 {
		return nil, ErrFont
	}
	for i := range int(be.Uint16(out[4:])) {
		rec := out[12+16*i:]
		off, n := be.Uint32(rec[8:]), be.Uint32(rec[12:])
		if uint64(off)+uint64(n) > uint64(len(out)) {
			return nil, fmt.Errorf("table %q out of the file: %w", rec[:4], ErrFont)
		}
		tables[string(rec[:4])] = out[off : off+n]
	}
	head, loca, glyf, hmtx, hhea := tables["head"], tables["loca"], tables["glyf"], tables["hmtx"], tables["hhea"]
	if len(head) < 54 || len(hhea) < 36 || glyf == nil {
		return nil, fmt.Errorf("no head, hhea or glyf table: %w", ErrFont)
	}
	glyph := func(g int) (int, int, bool) {
		if be.Uint16(head[50:]) == 0 {
			if 2*g+4 > len(loca) {
				return 0, 0, false
			}
			return int(be.Uint16(loca[2*g:])) * 2, int(be.Uint16(loca[2*g+2:])) * 2, true
		}
		if 4*g+8 > len(loca) {
			return 0, 0, false
		}
		return int(be.Uint32(loca[4*g:])), int(be.Uint32(loca[4*g+4:])), true
	}
	hs, he, ok1 := glyph(int(hy))
	ss, se, ok2 := glyph(int(soft))
	if !ok1 || !ok2 || he > len(glyf) || se > len(glyf) || se-ss > he-hs || hs > he || ss > se {
		return nil, fmt.Errorf("the soft hyphen's glyph does not fit the hyphen's: %w", ErrFont)
	}
	n := copy(glyf[hs:he], glyf[ss:se])
	clear(glyf[hs+n : he])
	metrics := int(be.Uint16(hhea[34:]))
	if int(hy) >= metrics || int(soft) >= metrics || 4*metrics > len(hmtx) {
		return nil, fmt.Errorf("hyphens without their own metrics: %w", ErrFont)
	}
	copy(hmtx[4*int(hy):4*int(hy)+4], hmtx[4*int(soft):4*int(soft)+4])
	return out, nil
}

// extraFont is a configured font (statements.fonts), loaded once per
// process: its bytes, their sha256 and the runes it has a glyph for.
type extraFont struct {
	path   string
	ttf    []byte
	sum    [sha256.Size]byte
	covers []uint64 // bit r set: the font maps rune r (Basic Multilingual Plane) to a glyph
}

func (e *extraFont) has(r rune) bool {
	return r >= 0 && r < 0x10000 && e.covers[r>>6]&(1<<(uint(r)&63)) != 0
}

var extraFonts sync.Map // path -> *extraLoad

type extraLoad struct {
	once sync.Once
	font *extraFont
	err  error
}

// loadExtraFont reads and checks the TrueType font at path, once per
// process (a later call with the same path gets the first result).
func loadExtraFont(path string) (*extraFont, error) {
	v, _ := extraFonts.LoadOrStore(path, &extraLoad{})
	l := v.(*extraLoad)
	l.once.Do(func() { l.font, l.err = readExtraFont(path) })
	return l.font, l.err
}

func readExtraFont(path string) (*extraFont, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("statements.fonts: %w", err)
	}
	if len(b) < 12 {
		return nil, fmt.Errorf("statements.fonts: %s is not a font file: %w", path, ErrFont)
	}
	switch string(b[:4]) {
	case "ttcf":
		return nil, fmt.Errorf("statements.fonts: %s is a font collection (.ttc): the PDF writer needs one TrueType font (.ttf) per file: %w", path, ErrFont)
	case "OTTO":
		return nil, fmt.Errorf("statements.fonts: %s has CFF (PostScript) outlines: the PDF writer embeds TrueType (glyf) outlines only; use a .ttf: %w", path, ErrFont)
	case "\x00\x01\x00\x00", "true":
	default:
		return nil, fmt.Errorf("statements.fonts: %s is not a TrueType font: %w", path, ErrFont)
	}
	hasGlyf := false
	for i := range int(binary.BigEndian.Uint16(b[4:])) {
		if 12+16*i+16 <= len(b) && string(b[12+16*i:16+16*i]) == "glyf" {
			hasGlyf = true
		}
	}
	if !hasGlyf {
		return nil, fmt.Errorf("statements.fonts: %s has no glyf table (TrueType outlines): %w", path, ErrFont)
	}
	f, err := sfnt.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("statements.fonts: %s: %w: %w", path, err, ErrFont)
	}
	e := &extraFont{path: path, ttf: b, sum: sha256.Sum256(b), covers: make([]uint64, 0x10000/64)}
	var buf sfnt.Buffer
	for r := rune(0x20); r < 0x10000; r++ {
		if idx, err := f.GlyphIndex(&buf, r); err == nil && idx != 0 {
			e.covers[r>>6] |= 1 << (uint(r) & 63)
		}
	}
	return e, nil
}

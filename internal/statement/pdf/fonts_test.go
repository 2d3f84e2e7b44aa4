package pdf

import (
	"testing"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// TestShortHyphen: the documents' Go fonts draw U+002D with the soft
// hyphen's short glyph (its advance and outline), every other glyph as
// before, and the embedded Go fonts themselves are not changed.
func TestShortHyphen(t *testing.T) {
	fonts, err := loadDocFonts()
	if err != nil {
		t.Fatal(err)
	}
	advance := func(ttf []byte, r rune) (fixed.Int26_6, int) {
		f, err := sfnt.Parse(ttf)
		if err != nil {
			t.Fatal(err)
		}
		var b sfnt.Buffer
		i, err := f.GlyphIndex(&b, r)
		if err != nil {
			t.Fatal(err)
		}
		adv, err := f.GlyphAdvance(&b, i, fixed.I(2048), font.HintingNone)
		if err != nil {
			t.Fatal(err)
		}
		segs, err := f.LoadGlyph(&b, i, fixed.I(2048), nil)
		if err != nil {
			t.Fatal(err)
		}
		return adv, len(segs)
	}
	for _, ff := range fonts {
		hy, hySegs := advance(ff.ttf, '-')
		soft, softSegs := advance(ff.ttf, '\u00AD')
		if hy != soft || hySegs != softSegs {
			t.Errorf("font %q: hyphen advance %v (%d segments), soft hyphen %v (%d)", ff.style, hy, hySegs, soft, softSegs)
		}
		minus, _ := advance(ff.ttf, '\u2212')
		if hy >= minus {
			t.Errorf("font %q: hyphen %v not shorter than the minus sign %v", ff.style, hy, minus)
		}
		for _, r := range "0aZ€" {
			a, _ := advance(ff.ttf, r)
			b, _ := advance(fontFiles[0].ttf, r)
			if ff.style == "" && a != b {
				t.Errorf("%q: advance %v, Go Regular %v", r, a, b)
			}
		}
	}
	if hy, _ := advance(goregular.TTF, '-'); hy != fixed.I(1196) {
		t.Errorf("Go Regular's own hyphen changed: %v", hy)
	}
}

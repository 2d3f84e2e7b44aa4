package locale

import (
	"testing"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"

	"github.com/reportjob/reportjob/internal/money"
)

// TestGoFontsHaveGlyphs: the statement PDF's Go fonts draw every rune the
// Latin-script catalogs and the number formats write (which is why U+202F,
// absent from them, prints as U+00A0). ja needs a CJK font
// (statements.fonts) and is not checked here.
func TestGoFontsHaveGlyphs(t *testing.T) {
	var fonts []*sfnt.Font
	for _, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
		f, err := sfnt.Parse(ttf)
		if err != nil {
			t.Fatal(err)
		}
		fonts = append(fonts, f)
	}
	var buf sfnt.Buffer
	has := func(r rune) bool {
		for _, f := range fonts {
			if i, err := f.GlyphIndex(&buf, r); err != nil || i == 0 {
				return false
			}
		}
		return true
	}
	if has('\u202f') {
		t.Log("the Go fonts now have U+202F: the fr group separator could follow CLDR")
	}
	check := func(where, s string) {
		for _, r := range s {
			if r != '\n' && !has(r) {
				t.Errorf("%s: %q has %U, which the Go fonts lack", where, s, r)
			}
		}
	}
	for _, lang := range Supported() {
		if lang == "ja" {
			continue
		}
		for key, text := range catalogs()[lang] {
			check(lang+" "+key, text)
		}
	}
	for _, tag := range []string{"en", "fr", "de", "es", "it", "pt", "nl", "ja", "fr-CH", "de-CH", "de-AT", "en-IN", "pt-PT", "sv", "pl"} {
		l := mustParse(t, tag)
		check(tag, l.Money(eur, money.TotalOf(-123456789))+l.Rate(1250))
	}
}

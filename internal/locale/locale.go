// Package locale writes a statement's wording, numbers and dates in the
// agency's language (SPEC section 7, version 4): thousands and decimal
// separators per CLDR, amounts in the currency's ISO 4217 digits, month
// names and date order, and the sentences of the document from catalog
// files a translator edits (catalogs/<language>.yaml).
//
// # Numbers
//
// Decimal and group separators, grouping sizes (en-IN groups by two above
// the thousands) and the percent pattern come from CLDR through
// golang.org/x/text, derived once per tag and cached. Two values x/text
// does not carry are tables here, from CLDR 45: the minimum grouping
// digits (es and pt-PT write 1234 ungrouped, 12.345 grouped) and where the
// currency pattern puts the currency. Amounts never go through a float:
// money.Currency.FormatTotal gives the exact decimal, whose integer part
// is regrouped. Deliberate departures from CLDR, for the PDF and for
// readers across countries:
//
//   - The narrow no-break space U+202F (CLDR's French group separator and
//     space before %) prints as the no-break space U+00A0: the statement
//     fonts lack U+202F.
//   - A negative number starts with the ASCII hyphen-minus "-" (U+002D),
//     never CLDR's minus sign U+2212 (sv, fi...), and bidi marks are
//     dropped: a statement is laid out left to right.
//   - Money writes the ISO 4217 code ("EUR", "JPY"), never a symbol ("€",
//     "¥", "$" is ambiguous), at the side CLDR's currency pattern puts the
//     symbol, separated from the number by U+00A0: "EUR 1,234.50" (en),
//     "1 234,50 EUR" (fr), "EUR 1.234,50" (nl, pt-BR).
//   - A language whose default digits are not Latin (fa, ar-EG) gets its
//     Latin-digit (nu-latn) symbols.
//
// # Wording and dates
//
// Texts are looked up by key in the catalog of the tag's base language
// ("pt-BR" reads catalogs/pt.yaml). A language without a catalog gets the
// English wording with its own number formats; Language says which
// catalog is used. A catalog is a flat YAML map `key: "text"`; {name} in a
// text is a placeholder T fills in. Keys ending in ".one" and ".other" are
// the plural forms TN picks from with CLDR's plural rules (a language
// without a singular form, such as ja, uses ".other" only, but keeps both
// keys). Dates use the keys month.1 to month.12 and the patterns
// pattern.date ({d} {m} {month} {yyyy}) and pattern.month ({m} {month}
// {yyyy}); a language whose month standing alone differs from the month
// in a date may add month_standalone.1 to .12, used by Month.
//
// # Adding a language
//
// Copy catalogs/en.yaml to catalogs/<language>.yaml (the ISO 639 code:
// "sv", "pl") and translate every text, keeping each {placeholder}. Then
// run `go test ./internal/locale/`: TestCatalogsComplete names every key
// missing from the new file, every key it has that en.yaml lacks, and
// every placeholder a translation dropped. Nothing else needs changing:
// the catalogs are embedded in the binary and a tag of that language uses
// the new file at once.
package locale

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
)

// ErrUnknownLocale is returned by Parse for a tag that is not BCP 47.
var ErrUnknownLocale = errors.New("unknown locale")

// Locale formats for one BCP 47 tag. The zero value is not usable: get
// one from Parse or English. A Locale is safe for concurrent use.
type Locale struct {
	tag  language.Tag
	lang string            // catalog language
	cat  map[string]string // that catalog
	en   map[string]string // English, for a key the catalog lacks
	num  *numbers
}

// English is the locale of a statement whose agency has none.
func English() *Locale { return newLocale(language.English) }

// ForDocument is the locale a document for tag is written in: Parse's
// when tag's language has a catalog, else English throughout, numbers
// included, so that no reader meets English words with another
// language's separators ("BHD 123,457" read as thousands). "" or a
// malformed tag is English too.
func ForDocument(tag string) *Locale {
	l, err := Parse(tag)
	if err != nil || !l.hasCatalog() {
		return English()
	}
	return l
}

// Parse returns the locale for a BCP 47 tag ("fr-FR", "ja"; "fr_FR" is
// read as "fr-FR"). A well-formed tag whose language has no catalog gets
// English wording with the tag's own number formats; a malformed tag, or
// one with an unknown subtag ("zz"), is ErrUnknownLocale.
func Parse(tag string) (*Locale, error) {
	t, err := language.Parse(tag)
	if err != nil {
		return nil, fmt.Errorf("locale %q: %w (%v)", tag, ErrUnknownLocale, err)
	}
	return newLocale(t), nil
}

func newLocale(t language.Tag) *Locale {
	cats := catalogs()
	base, _ := t.Base()
	lang := base.String()
	if _, ok := cats[lang]; !ok {
		lang = "en"
	}
	return &Locale{tag: t, lang: lang, cat: cats[lang], en: cats["en"], num: numbersFor(t)}
}

// Tag is the BCP 47 tag as parsed, in canonical form ("fr-FR").
func (l *Locale) Tag() string { return l.tag.String() }

// Language is the base language of the catalog the wording comes from:
// "pt" for "pt-BR", "en" for a language without a catalog.
func (l *Locale) Language() string { return l.lang }

// hasCatalog reports whether the tag's own language has a catalog.
func (l *Locale) hasCatalog() bool {
	base, _ := l.tag.Base()
	return l.lang == base.String()
}

// Supported lists the languages that have a catalog, sorted.
func Supported() []string {
	cats := catalogs()
	out := make([]string, 0, len(cats))
	for lang := range cats {
		out = append(out, lang)
	}
	sort.Strings(out)
	return out
}

// T is the catalog's text for key with each {name} replaced by the value
// that follows name in args (pairs): T("doc.owes", "payer", "Acme",
// "payee", "Billing Co", "amount", "EUR 12.00"). A key the language's
// catalog lacks takes the English text; a key no catalog has prints as
// the key, never an error (a test checks that every key exists in every
// catalog). A placeholder without a value stays as written.
func (l *Locale) T(key string, args ...string) string {
	text, ok := l.text(key)
	if !ok {
		return key
	}
	return fill(text, args)
}

// TN is T for a text that depends on a count n: the key+".one" text when
// CLDR's plural rules of the language make n singular (1 in en, de; 0 and
// 1 in fr, pt; never in ja), else key+".other". {n} is n written by Int;
// args are as for T.
func (l *Locale) TN(key string, n int64, args ...string) string {
	args = append([]string{"n", l.Int(n)}, args...)
	abs := n
	if abs < 0 {
		abs = -abs
	}
	// abs < 0 only for math.MinInt64, which is no singular.
	if abs >= 0 && plural.Cardinal.MatchPlural(l.tag, int(abs), 0, 0, 0, 0) == plural.One {
		if text, ok := l.text(key + ".one"); ok {
			return fill(text, args)
		}
	}
	if text, ok := l.text(key + ".other"); ok {
		return fill(text, args)
	}
	return l.T(key, args...)
}

func (l *Locale) text(key string) (string, bool) {
	if s, ok := l.cat[key]; ok {
		return s, true
	}
	s, ok := l.en[key]
	return s, ok
}

// fill replaces each {name} of text by its value in args (name, value
// pairs; a later pair wins) in one pass: a value is never read again for
// placeholders.
func fill(text string, args []string) string {
	if !strings.Contains(text, "{") {
		return text
	}
	vals := make(map[string]string, len(args)/2)
	for i := 0; i+1 < len(args); i += 2 {
		vals[args[i]] = args[i+1]
	}
	var b strings.Builder
	for {
		open := strings.IndexByte(text, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(text[open:], '}')
		if end < 0 {
			break
		}
		name := text[open+1 : open+end]
		b.WriteString(text[:open])
		if v, ok := vals[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(text[open : open+end+1])
		}
		text = text[open+end+1:]
	}
	b.WriteString(text)
	return b.String()
}

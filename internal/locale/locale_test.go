package locale

import (
	"errors"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/money"
)

// TestCatalogsComplete is the translator's checklist: every key of
// en.yaml in every catalog, no key en.yaml lacks (month_standalone.N
// excepted), and every {placeholder} of the English text kept.
func TestCatalogsComplete(t *testing.T) {
	cats, err := loadCatalogs()
	if err != nil {
		t.Fatal(err)
	}
	en := cats["en"]
	for _, lang := range Supported() {
		cat := cats[lang]
		for _, key := range sortedKeys(en) {
			text, ok := cat[key]
			if !ok {
				t.Errorf("catalogs/%s.yaml: key %q missing (en: %q)", lang, key, en[key])
				continue
			}
			if strings.TrimSpace(text) == "" {
				t.Errorf("catalogs/%s.yaml: key %q is empty", lang, key)
			}
			if strings.HasPrefix(key, "pattern.") {
				continue // checked by TestDatePatterns
			}
			for _, ph := range placeholders(en[key]) {
				if !strings.Contains(text, ph) {
					t.Errorf("catalogs/%s.yaml: key %q lacks %s: %q", lang, key, ph, text)
				}
			}
			for _, ph := range placeholders(text) {
				if !strings.Contains(en[key], ph) {
					t.Errorf("catalogs/%s.yaml: key %q has %s, which nothing fills: %q", lang, key, ph, text)
				}
			}
		}
		for _, key := range sortedKeys(cat) {
			if _, ok := en[key]; !ok && !isStandalone(key) {
				t.Errorf("catalogs/%s.yaml: key %q is not in en.yaml", lang, key)
			}
		}
	}
	if want := []string{"de", "en", "es", "fr", "it", "ja", "nl", "pt"}; !slices.Equal(Supported(), want) {
		t.Errorf("Supported() = %v, want %v", Supported(), want)
	}
}

// TestDatePatterns: a date pattern has a day, a month (name or number)
// and a year, and only the placeholders Date and Month fill.
func TestDatePatterns(t *testing.T) {
	for _, lang := range Supported() {
		cat := catalogs()[lang]
		for key, need := range map[string][]string{"pattern.date": {"{d}", "{yyyy}"}, "pattern.month": {"{yyyy}"}} {
			p := cat[key]
			for _, ph := range need {
				if !strings.Contains(p, ph) {
					t.Errorf("catalogs/%s.yaml: %s %q lacks %s", lang, key, p, ph)
				}
			}
			if !strings.Contains(p, "{m}") && !strings.Contains(p, "{month}") {
				t.Errorf("catalogs/%s.yaml: %s %q has neither {m} nor {month}", lang, key, p)
			}
			for _, ph := range placeholders(p) {
				if !slices.Contains([]string{"{d}", "{m}", "{month}", "{yyyy}"}, ph) {
					t.Errorf("catalogs/%s.yaml: %s %q: unknown %s", lang, key, p, ph)
				}
			}
		}
	}
}

func isStandalone(key string) bool {
	n, ok := strings.CutPrefix(key, "month_standalone.")
	return ok && slices.Contains([]string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}, n)
}

var placeholderRE = regexp.MustCompile(`\{[a-z_]+\}`)

func placeholders(s string) []string { return placeholderRE.FindAllString(s, -1) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestParse(t *testing.T) {
	tests := []struct{ in, tag, lang string }{
		{"en", "en", "en"},
		{"fr-FR", "fr-FR", "fr"},
		{"fr_FR", "fr-FR", "fr"},
		{"pt-BR", "pt-BR", "pt"},
		{"de-CH", "de-CH", "de"},
		{"ja", "ja", "ja"},
		{"sv-SE", "sv-SE", "en"}, // no catalog: English wording
		{"zh-Hant-TW", "zh-Hant-TW", "en"},
	}
	for _, tc := range tests {
		l := mustParse(t, tc.in)
		if l.Tag() != tc.tag || l.Language() != tc.lang {
			t.Errorf("Parse(%q): Tag %q Language %q, want %q %q", tc.in, l.Tag(), l.Language(), tc.tag, tc.lang)
		}
	}
	for _, bad := range []string{"", "fr_FR!!", "zz", "fr-FR-", "english", "12"} {
		l, err := Parse(bad)
		if !errors.Is(err, ErrUnknownLocale) || l != nil {
			t.Errorf("Parse(%q) = %v, %v; want ErrUnknownLocale", bad, l, err)
		} else if !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("Parse(%q): error %q does not name the tag", bad, err)
		}
	}
	if e := English(); e.Tag() != "en" || e.Language() != "en" || e.T("doc.title") != "Commission statement" {
		t.Errorf("English() = %q %q %q", e.Tag(), e.Language(), e.T("doc.title"))
	}
}

func TestT(t *testing.T) {
	fr := mustParse(t, "fr")
	if got, want := fr.T("doc.owes", "payer", "Acme", "payee", "Billing Co", "amount", "12,00 EUR", "date", "4 décembre 2026"),
		"Acme doit 12,00 EUR à Billing Co, à régler au plus tard le 4 décembre 2026."; got != want {
		t.Errorf("T(doc.owes) = %q, want %q", got, want)
	}
	en := English()
	for _, key := range []string{"no.such.key", "", "doc"} {
		if got := en.T(key, "a", "b"); got != key {
			t.Errorf("T(%q) = %q, want the key", key, got)
		}
	}
	// A value is not read again for placeholders; a missing value stays.
	if got, want := en.T("page", "n", "{total}"), "Page {total} of {total}"; got != want {
		t.Errorf("T(page) = %q, want %q", got, want)
	}
	if got, want := en.T("rate.range", "from", "1", "to", "2", "from", "3"), "3 to 2"; got != want {
		t.Errorf("T(rate.range) = %q, want %q", got, want)
	}
	// A key the language's catalog lacks takes the English text.
	l := &Locale{cat: map[string]string{}, en: catalogs()["en"], num: &english}
	if got, want := l.T("doc.title"), "Commission statement"; got != want {
		t.Errorf("fallback T = %q, want %q", got, want)
	}
}

func TestTN(t *testing.T) {
	tests := []struct {
		tag  string
		n    int64
		want string
	}{
		{"en", 1, "1 period"}, {"en", 0, "0 periods"}, {"en", 2, "2 periods"}, {"en", 1234, "1,234 periods"},
		{"fr", 0, "0 période"}, {"fr", 1, "1 période"}, {"fr", 2, "2 périodes"},
		{"de", 1, "1 Zeitraum"}, {"de", 1234, "1.234 Zeiträume"},
		{"pt-PT", 0, "0 períodos"}, {"pt-BR", 0, "0 período"},
		{"ja", 1, "1期間"}, {"ja", 3, "3期間"},
		{"es", 1, "1 periodo"}, {"es", -1, "-1 periodo"},
		{"en", math.MinInt64, "-9,223,372,036,854,775,808 periods"},
	}
	for _, tc := range tests {
		if got := mustParse(t, tc.tag).TN("appendix.periods", tc.n); got != tc.want {
			t.Errorf("%s: TN(appendix.periods, %d) = %q, want %q", tc.tag, tc.n, got, tc.want)
		}
	}
	en := English()
	if got, want := en.TN("doc.terms_days", 30), "Net 30 days"; got != want {
		t.Errorf("TN(doc.terms_days, 30) = %q, want %q", got, want)
	}
	// A key without plural forms is T's text, with {n} filled.
	if got, want := en.TN("page", 2, "total", "5"), "Page 2 of 5"; got != want {
		t.Errorf("TN(page) = %q, want %q", got, want)
	}
	if got := en.TN("no.such.key", 2); got != "no.such.key" {
		t.Errorf("TN(missing) = %q, want the key", got)
	}
}

// TestMailBody: the body keeps its line breaks and every placeholder.
func TestMailBody(t *testing.T) {
	for _, lang := range Supported() {
		body := mustParse(t, lang).T("mail.body", "agency", "A", "number", "N", "month", "M", "amounts", "X", "due", "D", "instructions", "I", "contact", "C", "issuer", "S")
		if strings.Count(body, "\n") < 4 || strings.Contains(body, "{") || strings.Contains(body, `\n`) {
			t.Errorf("%s: mail.body = %q", lang, body)
		}
	}
}

// TestForDocument: a language without a catalog is English throughout
// (words and numbers); one with a catalog keeps its region's numbers.
func TestForDocument(t *testing.T) {
	eur, _ := money.LookupCurrency("EUR")
	amount := money.TotalOf(123456789)
	for _, tc := range []struct{ tag, lang, want string }{
		{"pl", "en", "1,234,567.89"}, {"pl-PL", "en", "1,234,567.89"}, {"", "en", "1,234,567.89"}, {"zz!", "en", "1,234,567.89"},
		{"de-CH", "de", "1’234’567.89"}, {"fr-FR", "fr", "1\u00a0234\u00a0567,89"}, {"ja", "ja", "1,234,567.89"},
	} {
		l := ForDocument(tc.tag)
		if l.Language() != tc.lang || l.Amount(eur, amount) != tc.want {
			t.Errorf("ForDocument(%q): language %s amount %q, want %s %q", tc.tag, l.Language(), l.Amount(eur, amount), tc.lang, tc.want)
		}
	}
}

package locale

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"

	"github.com/reportjob/reportjob/internal/money"
)

// numbers is how one tag writes numbers: derived once from x/text's CLDR
// data (symbols, grouping sizes, percent pattern) plus the two tables
// below that x/text does not carry (minimum grouping digits, currency
// position).
type numbers struct {
	decimal, group string
	primary        int // digits in the group next to the decimal point
	secondary      int // digits in the other groups (2 in en-IN)
	minGrouping    int // CLDR minimumGroupingDigits: es "1234", "12.345"
	pctPrefix      string
	pctSuffix      string
	codeBefore     bool // "EUR 12.00" rather than "12,00 EUR"
	signAfterCode  bool // "EUR -12,00" (nl) rather than "-EUR 12.00" (en)
}

const (
	nbsp       = "\u00a0"
	narrowNBSP = "\u202f"
)

var numbersCache sync.Map // canonical tag string -> *numbers

// numbersFor returns the number formats of tag, derived on first use.
func numbersFor(tag language.Tag) *numbers {
	key := tag.String()
	if n, ok := numbersCache.Load(key); ok {
		return n.(*numbers)
	}
	n := deriveNumbers(tag)
	got, _ := numbersCache.LoadOrStore(key, n)
	return got.(*numbers)
}

// english is the fallback when a tag's data cannot be read as Latin digits.
var english = numbers{decimal: ".", group: ",", primary: 3, secondary: 3, minGrouping: 1, pctSuffix: "%", codeBefore: true}

func deriveNumbers(tag language.Tag) *numbers {
	n, ok := readNumbers(tag)
	if !ok {
		// A locale whose default digits are not Latin (fa, ar-EG): its
		// Latin-digit symbols, or English ones when x/text has none.
		if latn, err := tag.SetTypeForKey("nu", "latn"); err == nil {
			n, ok = readNumbers(latn)
		}
		if !ok {
			n = english
		}
	}
	// Extensions (-u-nu-latn) do not change the tables' values.
	b, s, r := tag.Raw()
	if bare, err := language.Compose(b, s, r); err == nil {
		tag = bare
	}
	n.minGrouping = lookup(tag, minGroupingDigits, 1)
	pos := lookup(tag, currencyPosition, before)
	n.codeBefore = pos != after
	n.signAfterCode = pos == beforeSignAfter
	return &n
}

// readNumbers formats probe numbers with x/text and reads the symbols and
// grouping back from the result; false when the digits are not ASCII.
func readNumbers(tag language.Tag) (numbers, bool) {
	p := message.NewPrinter(tag)
	dec := clean(p.Sprint(number.Decimal(12345678.5)))
	var runs, seps []string
	cur, sep := "", ""
	for _, r := range dec {
		if r >= '0' && r <= '9' {
			if sep != "" {
				seps = append(seps, sep)
				sep = ""
			}
			cur += string(r)
			continue
		}
		if r == utf8.RuneError || unicode.IsDigit(r) || unicode.IsLetter(r) {
			return numbers{}, false // other digits (fa), or not a number
		}
		if cur != "" {
			runs = append(runs, cur)
			cur = ""
		}
		sep += string(r)
	}
	runs = append(runs, cur)
	// Expect 12345678 grouped (at least two integer runs) then "5".
	if len(runs) < 3 || len(seps) != len(runs)-1 || runs[len(runs)-1] != "5" || strings.Join(runs, "") != "123456785" {
		return numbers{}, false
	}
	n := numbers{decimal: seps[len(seps)-1], group: seps[0]}
	ints := runs[:len(runs)-1]
	n.primary = len(ints[len(ints)-1])
	n.secondary = n.primary
	if len(ints) >= 3 {
		n.secondary = len(ints[len(ints)-2])
	}
	if strings.ContainsAny(n.decimal+n.group, "0123456789") || n.primary == 0 || n.secondary == 0 {
		return numbers{}, false
	}
	// CLDR 34+ writes French groups with a narrow no-break space, which
	// the statement fonts lack: print the no-break space instead.
	n.group = strings.ReplaceAll(n.group, narrowNBSP, nbsp)

	pct := clean(p.Sprint(number.Percent(0.5)))
	i := strings.Index(pct, "50")
	if i < 0 {
		return numbers{}, false
	}
	n.pctPrefix = strings.ReplaceAll(pct[:i], narrowNBSP, nbsp)
	n.pctSuffix = strings.ReplaceAll(pct[i+2:], narrowNBSP, nbsp)
	return n, true
}

// clean drops bidi marks (the PDF lays text out left to right) and
// replaces CLDR's minus sign U+2212 by the ASCII hyphen-minus.
func clean(s string) string {
	return strings.NewReplacer("\u200e", "", "\u200f", "", "\u061c", "", "\u2212", "-").Replace(s)
}

// minGroupingDigits is CLDR's minimumGroupingDigits (version 45) where it
// is not 1: x/text's tables (CLDR 32) do not carry it. Looked up along the
// tag's parents (es-MX -> es-419 -> es), so es-419 resets es's 2.
var minGroupingDigits = map[string]int{
	"es": 2, "es-419": 1, "pt-PT": 2, "pl": 2,
}

type codePosition int

const (
	before          codePosition = iota + 1 // "¤#,##0.00": EUR 12.00, -EUR 12.00
	beforeSignAfter                         // "¤ #,##0.00;¤ -#,##0.00": EUR 12,00, EUR -12,00
	after                                   // "#,##0.00 ¤": 12,00 EUR, -12,00 EUR
)

// currencyPosition is where CLDR's standard currency pattern (version 45)
// puts the currency; x/text has no currency patterns. Looked up along the
// tag's parents; a language not listed writes the code first.
var currencyPosition = map[string]codePosition{
	"en": before, "ja": before, "nl": beforeSignAfter,
	"pt": before, "pt-PT": after,
	"fr": after, "de": after, "de-AT": before, "de-CH": beforeSignAfter, "de-LI": beforeSignAfter,
	"es": after, "es-419": before,
	"it": after, "it-CH": beforeSignAfter,
}

// lookup returns table's value for tag or its nearest parent.
func lookup[V any](tag language.Tag, table map[string]V, def V) V {
	for t := tag; ; t = t.Parent() {
		if v, ok := table[t.String()]; ok {
			return v
		}
		if t.IsRoot() {
			return def
		}
	}
}

// groupDigits writes the ASCII digits of a non-negative integer with the
// locale's separators.
func (n *numbers) groupDigits(digits string) string {
	if len(digits) < n.primary+n.minGrouping {
		return digits
	}
	var parts []string
	end := len(digits)
	size := n.primary
	for end > size {
		parts = append(parts, digits[end-size:end])
		end -= size
		size = n.secondary
	}
	parts = append(parts, digits[:end])
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
		if i > 0 {
			b.WriteString(n.group)
		}
	}
	return b.String()
}

// decimalText rewrites a plain decimal ("-1234.5", "945652") with the
// locale's separators.
func (n *numbers) decimalText(plain string) string {
	neg := strings.HasPrefix(plain, "-")
	plain = strings.TrimPrefix(plain, "-")
	ip, fp, hasFrac := strings.Cut(plain, ".")
	s := n.groupDigits(ip)
	if hasFrac {
		s += n.decimal + fp
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Amount is t in c's minor units written with the locale's separators and
// exactly c's ISO 4217 digits, without the currency: "179,201.87" (en),
// "179 201,87" (fr, with U+00A0), "179.201,87" (de), "945,652" (ja, JPY).
// A negative amount starts with "-" (U+002D).
func (l *Locale) Amount(c money.Currency, t money.Total) string {
	return l.num.decimalText(c.FormatTotal(t))
}

// Money is Amount with the ISO code where the locale's CLDR currency
// pattern puts the currency, separated by U+00A0: "EUR 179,201.87" (en),
// "179 201,87 EUR" (fr), "EUR -12,00" (nl), "-EUR 12.00" (en).
func (l *Locale) Money(c money.Currency, t money.Total) string {
	a := l.Amount(c, t)
	if !l.num.codeBefore {
		return a + nbsp + c.Code
	}
	if neg := strings.HasPrefix(a, "-"); neg && !l.num.signAfterCode {
		return "-" + c.Code + nbsp + a[1:]
	}
	return c.Code + nbsp + a
}

// Int is n with the locale's thousands separator: "12,345" (en),
// "12.345" (de), "1234" (es).
func (l *Locale) Int(n int64) string {
	return l.num.decimalText(strconv.FormatInt(n, 10))
}

// Rate is a rate in basis points as a percentage with the locale's
// decimal separator and percent pattern: "10%" (en), "12,5 %" (fr, with
// U+00A0), "0.01%" (1 bps). Integer arithmetic only.
func (l *Locale) Rate(bps int32) string {
	v := int64(bps)
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	s := strconv.FormatInt(v/100, 10)
	if f := v % 100; f != 0 {
		s += "." + strings.TrimSuffix(strconv.FormatInt(100+f, 10)[1:], "0")
	}
	return sign + l.num.pctPrefix + l.num.decimalText(s) + l.num.pctSuffix
}

package locale

import (
	"math"
	"testing"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"

	"github.com/reportjob/reportjob/internal/money"
)

const sp = "\u00a0" // the no-break space the package writes for CLDR's spaces

var (
	eur = money.Currency{Code: "EUR", Digits: 2}
	jpy = money.Currency{Code: "JPY", Digits: 0}
	bhd = money.Currency{Code: "BHD", Digits: 3}
	clf = money.Currency{Code: "CLF", Digits: 4}
)

func mustParse(t *testing.T, tag string) *Locale {
	t.Helper()
	l, err := Parse(tag)
	if err != nil {
		t.Fatalf("Parse(%q): %v", tag, err)
	}
	return l
}

func TestAmount(t *testing.T) {
	tests := []struct {
		tag                       string
		eur, neg, small, jpy, bhd string
		clf                       string
	}{
		// tag: EUR 179201.87, EUR -1234.50, EUR 1234.00, JPY 945652, BHD 1234.567, CLF 1234.5678
		{"en", "179,201.87", "-1,234.50", "1,234.00", "945,652", "1,234.567", "1,234.5678"},
		{"fr", "179" + sp + "201,87", "-1" + sp + "234,50", "1" + sp + "234,00", "945" + sp + "652", "1" + sp + "234,567", "1" + sp + "234,5678"},
		{"de", "179.201,87", "-1.234,50", "1.234,00", "945.652", "1.234,567", "1.234,5678"},
		{"es", "179.201,87", "-1234,50", "1234,00", "945.652", "1234,567", "1234,5678"},
		{"it", "179.201,87", "-1.234,50", "1.234,00", "945.652", "1.234,567", "1.234,5678"},
		{"pt", "179.201,87", "-1.234,50", "1.234,00", "945.652", "1.234,567", "1.234,5678"},
		{"pt-BR", "179.201,87", "-1.234,50", "1.234,00", "945.652", "1.234,567", "1.234,5678"},
		{"nl", "179.201,87", "-1.234,50", "1.234,00", "945.652", "1.234,567", "1.234,5678"},
		{"ja", "179,201.87", "-1,234.50", "1,234.00", "945,652", "1,234.567", "1,234.5678"},
		// Region variants.
		{"fr-CH", "179" + sp + "201,87", "-1" + sp + "234,50", "1" + sp + "234,00", "945" + sp + "652", "1" + sp + "234,567", "1" + sp + "234,5678"},
		{"de-CH", "179’201.87", "-1’234.50", "1’234.00", "945’652", "1’234.567", "1’234.5678"},
		{"de-AT", "179" + sp + "201,87", "-1" + sp + "234,50", "1" + sp + "234,00", "945" + sp + "652", "1" + sp + "234,567", "1" + sp + "234,5678"},
		{"en-IN", "1,79,201.87", "-1,234.50", "1,234.00", "9,45,652", "1,234.567", "1,234.5678"},
		{"es-MX", "179,201.87", "-1,234.50", "1,234.00", "945,652", "1,234.567", "1,234.5678"},
		{"pt-PT", "179" + sp + "201,87", "-1234,50", "1234,00", "945" + sp + "652", "1234,567", "1234,5678"},
		{"ja-JP", "179,201.87", "-1,234.50", "1,234.00", "945,652", "1,234.567", "1,234.5678"},
		// No catalog, own numbers; non-Latin default digits fall back to Latin ones.
		{"sv", "179" + sp + "201,87", "-1" + sp + "234,50", "1" + sp + "234,00", "945" + sp + "652", "1" + sp + "234,567", "1" + sp + "234,5678"},
		{"fa", "179,201.87", "-1,234.50", "1,234.00", "945,652", "1,234.567", "1,234.5678"},
	}
	for _, tc := range tests {
		t.Run(tc.tag, func(t *testing.T) {
			l := mustParse(t, tc.tag)
			for _, c := range []struct {
				cur   money.Currency
				minor int64
				want  string
			}{
				{eur, 17920187, tc.eur}, {eur, -123450, tc.neg}, {eur, 123400, tc.small},
				{jpy, 945652, tc.jpy}, {bhd, 1234567, tc.bhd}, {clf, 12345678, tc.clf},
			} {
				if got := l.Amount(c.cur, money.TotalOf(c.minor)); got != c.want {
					t.Errorf("Amount(%s %d) = %q, want %q", c.cur.Code, c.minor, got, c.want)
				}
			}
		})
	}
}

func TestAmountBeyondFloat(t *testing.T) {
	big, _ := money.TotalOf(math.MaxInt64).Add(money.TotalOf(math.MaxInt64))
	got := English().Amount(eur, big.Neg())
	if want := "-184,467,440,737,095,516.14"; got != want {
		t.Errorf("Amount(-2*MaxInt64) = %q, want %q", got, want)
	}
	if got, want := mustParse(t, "de").Amount(eur, money.TotalOf(1)), "0,01"; got != want {
		t.Errorf("Amount(1 cent) = %q, want %q", got, want)
	}
}

func TestMoney(t *testing.T) {
	tests := []struct{ tag, pos, neg, jpy string }{
		// CLDR 45 standard currency patterns, with the ISO code.
		{"en", "EUR" + sp + "179,201.87", "-EUR" + sp + "12.00", "JPY" + sp + "945,652"},
		{"fr", "179" + sp + "201,87" + sp + "EUR", "-12,00" + sp + "EUR", "945" + sp + "652" + sp + "JPY"},
		{"de", "179.201,87" + sp + "EUR", "-12,00" + sp + "EUR", "945.652" + sp + "JPY"},
		{"es", "179.201,87" + sp + "EUR", "-12,00" + sp + "EUR", "945.652" + sp + "JPY"},
		{"it", "179.201,87" + sp + "EUR", "-12,00" + sp + "EUR", "945.652" + sp + "JPY"},
		{"pt", "EUR" + sp + "179.201,87", "-EUR" + sp + "12,00", "JPY" + sp + "945.652"}, // pt: "¤ #,##0.00"
		{"pt-BR", "EUR" + sp + "179.201,87", "-EUR" + sp + "12,00", "JPY" + sp + "945.652"},
		{"pt-PT", "179" + sp + "201,87" + sp + "EUR", "-12,00" + sp + "EUR", "945" + sp + "652" + sp + "JPY"},
		{"nl", "EUR" + sp + "179.201,87", "EUR" + sp + "-12,00", "JPY" + sp + "945.652"}, // "¤ #,##0.00;¤ -#,##0.00"
		{"ja", "EUR" + sp + "179,201.87", "-EUR" + sp + "12.00", "JPY" + sp + "945,652"},
		{"de-CH", "EUR" + sp + "179’201.87", "EUR" + sp + "-12.00", "JPY" + sp + "945’652"},
		{"de-AT", "EUR" + sp + "179" + sp + "201,87", "-EUR" + sp + "12,00", "JPY" + sp + "945" + sp + "652"},
		{"es-MX", "EUR" + sp + "179,201.87", "-EUR" + sp + "12.00", "JPY" + sp + "945,652"},
		{"fr-CH", "179" + sp + "201,87" + sp + "EUR", "-12,00" + sp + "EUR", "945" + sp + "652" + sp + "JPY"},
	}
	for _, tc := range tests {
		l := mustParse(t, tc.tag)
		for _, c := range []struct {
			cur   money.Currency
			minor int64
			want  string
		}{{eur, 17920187, tc.pos}, {eur, -1200, tc.neg}, {jpy, 945652, tc.jpy}} {
			if got := l.Money(c.cur, money.TotalOf(c.minor)); got != c.want {
				t.Errorf("%s: Money(%s %d) = %q, want %q", tc.tag, c.cur.Code, c.minor, got, c.want)
			}
		}
	}
}

func TestIntAndRate(t *testing.T) {
	tests := []struct {
		tag           string
		i1234, i12345 string
		r10, r125, r1 string
		rNeg, rBig    string
	}{
		{"en", "1,234", "12,345", "10%", "12.5%", "0.01%", "-2.5%", "1,234.56%"},
		{"fr", "1" + sp + "234", "12" + sp + "345", "10" + sp + "%", "12,5" + sp + "%", "0,01" + sp + "%", "-2,5" + sp + "%", "1" + sp + "234,56" + sp + "%"},
		{"de", "1.234", "12.345", "10" + sp + "%", "12,5" + sp + "%", "0,01" + sp + "%", "-2,5" + sp + "%", "1.234,56" + sp + "%"},
		{"es", "1234", "12.345", "10" + sp + "%", "12,5" + sp + "%", "0,01" + sp + "%", "-2,5" + sp + "%", "1234,56" + sp + "%"},
		{"it", "1.234", "12.345", "10%", "12,5%", "0,01%", "-2,5%", "1.234,56%"},
		{"pt", "1.234", "12.345", "10%", "12,5%", "0,01%", "-2,5%", "1.234,56%"},
		{"pt-BR", "1.234", "12.345", "10%", "12,5%", "0,01%", "-2,5%", "1.234,56%"},
		{"nl", "1.234", "12.345", "10%", "12,5%", "0,01%", "-2,5%", "1.234,56%"},
		{"ja", "1,234", "12,345", "10%", "12.5%", "0.01%", "-2.5%", "1,234.56%"},
		{"fr-CH", "1" + sp + "234", "12" + sp + "345", "10%", "12,5%", "0,01%", "-2,5%", "1" + sp + "234,56%"},
		{"de-CH", "1’234", "12’345", "10%", "12.5%", "0.01%", "-2.5%", "1’234.56%"},
		{"en-IN", "1,234", "12,345", "10%", "12.5%", "0.01%", "-2.5%", "1,234.56%"},
		{"pt-PT", "1234", "12" + sp + "345", "10%", "12,5%", "0,01%", "-2,5%", "1234,56%"},
		{"es-ES", "1234", "12.345", "10" + sp + "%", "12,5" + sp + "%", "0,01" + sp + "%", "-2,5" + sp + "%", "1234,56" + sp + "%"},
		{"en-u-nu-arab", "1,234", "12,345", "10%", "12.5%", "0.01%", "-2.5%", "1,234.56%"}, // Latin digits
		{"pl", "1234", "12" + sp + "345", "10%", "12,5%", "0,01%", "-2,5%", "1234,56%"},
	}
	for _, tc := range tests {
		l := mustParse(t, tc.tag)
		for _, c := range []struct{ got, want string }{
			{l.Int(1234), tc.i1234}, {l.Int(12345), tc.i12345},
			{l.Rate(1000), tc.r10}, {l.Rate(1250), tc.r125}, {l.Rate(1), tc.r1},
			{l.Rate(-250), tc.rNeg}, {l.Rate(123456), tc.rBig},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %q, want %q", tc.tag, c.got, c.want)
			}
		}
	}
	if got, want := English().Int(-1234567), "-1,234,567"; got != want {
		t.Errorf("Int(-1234567) = %q, want %q", got, want)
	}
	if got, want := mustParse(t, "en-IN").Int(123456789), "12,34,56,789"; got != want {
		t.Errorf("en-IN Int = %q, want %q", got, want)
	}
}

// TestNumbersMatchXText checks the regrouping against x/text's own CLDR
// formatting where the two must agree: integers of five digits and more
// (x/text does not apply minimum grouping digits) and whole percentages.
func TestNumbersMatchXText(t *testing.T) {
	for _, tag := range []string{"en", "fr", "de", "es", "it", "pt", "pt-BR", "pt-PT", "nl", "ja", "fr-CH", "de-CH", "de-AT", "it-CH", "en-IN", "es-MX", "sv", "pl"} {
		l := mustParse(t, tag)
		p := message.NewPrinter(language.MustParse(tag))
		for _, n := range []int64{12345, 123456789, -9876543210} {
			if got, want := l.Int(n), clean(p.Sprint(number.Decimal(n))); got != want {
				t.Errorf("%s: Int(%d) = %q, x/text %q", tag, n, got, want)
			}
		}
		if got, want := l.Rate(1000), clean(p.Sprint(number.Percent(0.1))); got != want {
			t.Errorf("%s: Rate(1000) = %q, x/text %q", tag, got, want)
		}
	}
}

package money

import (
	"fmt"

	"golang.org/x/text/currency"
)

// LookupCurrency returns the ISO 4217 currency with alphabetic code code,
// which must be exactly 3 uppercase ASCII letters ("USD", not "usd").
//
// The minor-unit digits are CLDR's standard rounding scale as shipped in
// golang.org/x/text/currency (USD 2, EUR 2, JPY 0, BHD 3, KWD 3, CLF 4).
// Codes x/text does not know (including some recent ones, e.g. VES, ZWG in
// x/text v0.43.0) are ErrUnknownCurrency. So are the codes that are not
// money of any country: XXX (no currency) and every unit x/text lists only
// under the unknown region ZZ (XTS testing; XAU, XAG, XPT, XPD metals; XDR,
// XSU, XUA, XBA..XBD, XFO, XFU, XRE units of account). Regional units
// such as XOF, XAF, XCD, XPF, fund codes such as CLF, and historical
// currencies x/text knows (e.g. DEM) are accepted.
func LookupCurrency(code string) (Currency, error) {
	if len(code) != 3 || !isUpper(code[0]) || !isUpper(code[1]) || !isUpper(code[2]) {
		return Currency{}, fmt.Errorf("currency %q: not 3 uppercase letters: %w", code, ErrUnknownCurrency)
	}
	u, err := currency.ParseISO(code)
	if err != nil || u == currency.XXX || !countryCurrency[u] {
		return Currency{}, fmt.Errorf("currency %q: %w", code, ErrUnknownCurrency)
	}
	scale, _ := currency.Standard.Rounding(u)
	return Currency{Code: code, Digits: scale}, nil
}

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }

// countryCurrency holds every unit x/text lists under some real region
// (any date, tender or not).
var countryCurrency = func() map[currency.Unit]bool {
	m := make(map[currency.Unit]bool)
	for it := currency.Query(currency.NonTender, currency.Historical); it.Next(); {
		if it.Region().String() != "ZZ" {
			m[it.Unit()] = true
		}
	}
	return m
}()

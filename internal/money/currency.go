package money

import (
	"fmt"
	"slices"
	"strings"
)

//go:generate go run ./internal/gen -in testdata/iso4217-list-one.xml -out iso4217.go

// codeDigits is one row of the generated ISO 4217 table.
type codeDigits struct {
	code   string
	digits uint8
}

// LookupCurrency returns the ISO 4217 currency with alphabetic code code,
// which must be exactly 3 uppercase ASCII letters ("USD", not "usd").
//
// The minor-unit digits are ISO 4217's own (list one, the "current
// currency and funds" list, published ISO4217Published): USD 2, JPY 0,
// BHD 3, CLF 4, COP 2, IQD 3, VES 2. They are not the display digits of a
// locale table such as CLDR, which differ for COP, IQD, ALL, IRR and
// others. Fund codes (CLF, UYW, USN, ...) and regional units (XOF, XAF,
// XCD, XPF) are accepted. Codes whose minor unit list one gives as "N.A."
// are not money of any country and are ErrUnknownCurrency: XXX (no
// currency), XTS (testing), XAU, XAG, XPT, XPD (metals), XDR, XSU, XUA,
// XBA..XBD (units of account). So are codes not on the list, including
// withdrawn ones (DEM, VEF).
func LookupCurrency(code string) (Currency, error) {
	if len(code) != 3 || !isUpper(code[0]) || !isUpper(code[1]) || !isUpper(code[2]) {
		if up := strings.ToUpper(code); up != code {
			if _, err := LookupCurrency(up); err == nil {
				return Currency{}, fmt.Errorf("currency %q: not 3 uppercase letters (write %q): %w", code, up, ErrUnknownCurrency)
			}
		}
		return Currency{}, fmt.Errorf("currency %q: not 3 uppercase letters: %w", code, ErrUnknownCurrency)
	}
	i, ok := slices.BinarySearchFunc(iso4217Digits[:], code, func(e codeDigits, code string) int {
		return strings.Compare(e.code, code)
	})
	if ok {
		return Currency{Code: code, Digits: int(iso4217Digits[i].digits)}, nil
	}
	if _, na := slices.BinarySearch(iso4217NoMinorUnit[:], code); na {
		return Currency{}, fmt.Errorf("currency %q: ISO 4217 gives it no minor unit (not money of a country): %w", code, ErrUnknownCurrency)
	}
	return Currency{}, fmt.Errorf("currency %q: not in ISO 4217 list one (%s): %w", code, ISO4217Published, ErrUnknownCurrency)
}

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }

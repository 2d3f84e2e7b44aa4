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

// KnownCurrency is LookupCurrency without the error: ok is false for any
// code LookupCurrency refuses. It is a table look-up (no search, nothing
// allocated), and Code is the table's own string, so the currency does not
// keep code's memory alive.
func KnownCurrency(code string) (c Currency, ok bool) {
	if len(code) != 3 || !isUpper(code[0]) || !isUpper(code[1]) || !isUpper(code[2]) {
		return Currency{}, false
	}
	i := currencyIndex[(int(code[0]-'A')*26+int(code[1]-'A'))*26+int(code[2]-'A')]
	if i == 0 {
		return Currency{}, false
	}
	e := &iso4217Digits[i-1]
	return Currency{Code: e.code, Digits: int(e.digits)}, true
}

// currencyIndex maps a code of 3 uppercase letters (base 26) to its
// position in iso4217Digits plus one, 0 for a code not there.
var currencyIndex = func() (idx [26 * 26 * 26]uint8) {
	if len(iso4217Digits) > 255 {
		panic("money: too many ISO 4217 codes for currencyIndex")
	}
	for i, e := range iso4217Digits {
		idx[(int(e.code[0]-'A')*26+int(e.code[1]-'A'))*26+int(e.code[2]-'A')] = uint8(i + 1)
	}
	return idx
}()

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }

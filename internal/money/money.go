// Package money handles amounts as integer minor units of an ISO 4217
// currency: the currencies and their minor units (ISO 4217 list one),
// exact parsing and formatting, commission rounding, and Total, a signed
// 128-bit sum for period totals and DECIMAL(38,4) columns. No float is used
// anywhere.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Currency is an ISO 4217 currency and the number of its minor-unit
// digits (USD 2, JPY 0, BHD 3).
type Currency struct {
	Code   string
	Digits int
}

// Sentinel errors. Errors returned by this package wrap one of them and
// name the offending value.
var (
	// ErrUnknownCurrency: the code is not a known ISO 4217 currency.
	ErrUnknownCurrency = errors.New("unknown currency")
	// ErrOverflow: the value does not fit the target integer.
	ErrOverflow = errors.New("amount out of range")
	// ErrBadAmount: the text is not an exact decimal amount of the currency.
	ErrBadAmount = errors.New("bad amount")
)

// AmountError is the error ParseAmount returns: the text it was given and
// why it was refused. Err is ErrBadAmount or ErrOverflow.
type AmountError struct {
	Text   string
	Reason string
	Err    error
}

func (e *AmountError) Error() string { return fmt.Sprintf("amount %q: %s", e.Text, e.Reason) }

// Unwrap returns ErrBadAmount or ErrOverflow.
func (e *AmountError) Unwrap() error { return e.Err }

// maxExpDigits bounds the exponent of a number's text. DynamoDB numbers
// lie in 1E-130..9.9E+125, so 4 digits is plenty.
const maxExpDigits = 4

// ParseAmount parses the exact decimal text of an amount in major units
// ("19.99", "1500", "0.5", "-3", "1.999E1") into minor units of c.
//
// Grammar: [+-] digits [. digits] [(e|E) [+-] digits], at least one digit
// before or after the point; no spaces, no thousands separators. It never
// rounds: a value with more fraction digits than c has ("19.999" USD) is an
// ErrBadAmount; trailing zeros are fine ("19.990" USD is 1999). A value
// outside int64 minor units is an ErrOverflow. Negative and zero values
// parse; the caller decides whether they are allowed. Errors are
// *AmountError.
func ParseAmount(text string, c Currency) (int64, error) {
	if v, ok := parsePlainAmount(text, c); ok {
		return v, nil
	}
	neg, digits, k, err := scanMinor(text, c)
	if err != nil || digits == "" {
		return 0, err
	}
	if len(digits)+k > 19 {
		return 0, &AmountError{Text: text, Reason: "out of range", Err: ErrOverflow}
	}
	digits += strings.Repeat("0", k)
	u, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || u > math.MaxInt64+1 || (!neg && u > math.MaxInt64) {
		return 0, &AmountError{Text: text, Reason: "out of range", Err: ErrOverflow}
	}
	if neg {
		return int64(-u), nil // -(2^63) wraps to MinInt64, as intended
	}
	return int64(u), nil
}

// parsePlainAmount parses the usual form of an amount without allocating:
// 1 to 14 digits, then optionally a point and 1 to c.Digits digits
// ("19.99", "1500", "0.5"). Anything else (a sign, an exponent, more
// digits) is left to the general parser (ok false). For the texts it
// takes, the value is the general parser's: below 10^18, never an error.
func parsePlainAmount(text string, c Currency) (v int64, ok bool) {
	intPart, frac := text, ""
	for i := 0; i < len(text); i++ {
		if text[i] == '.' {
			intPart, frac = text[:i], text[i+1:]
			if frac == "" {
				return 0, false
			}
			break
		}
	}
	if len(intPart) == 0 || len(intPart) > 14 || len(frac) > c.Digits || c.Digits > 4 {
		return 0, false
	}
	for i := 0; i < len(intPart); i++ {
		d := intPart[i] - '0'
		if d > 9 {
			return 0, false
		}
		v = v*10 + int64(d)
	}
	for i := 0; i < c.Digits; i++ {
		v *= 10
		if i < len(frac) {
			d := frac[i] - '0'
			if d > 9 {
				return 0, false
			}
			v += int64(d)
		}
	}
	return v, true
}

// scanMinor reads text with ParseAmount's grammar as a number of minor
// units of c: |value| = digits x 10^k, digits without leading zeros ("" for
// zero) and k >= 0. The error is an *AmountError wrapping ErrBadAmount.
func scanMinor(text string, c Currency) (neg bool, digits string, k int, err error) {
	bad := func(reason string) (bool, string, int, error) {
		return false, "", 0, &AmountError{Text: text, Reason: reason, Err: ErrBadAmount}
	}
	s := text
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return bad("not a decimal number")
	}
	e := 0
	if exp != "" || len(mant) < len(s) {
		esign := 1
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			if exp[0] == '-' {
				esign = -1
			}
			exp = exp[1:]
		}
		if exp == "" || !allDigits(exp) {
			return bad("not a decimal number")
		}
		exp = strings.TrimLeft(exp, "0")
		if len(exp) > maxExpDigits {
			return bad("exponent out of range")
		}
		if exp != "" {
			n, _ := strconv.Atoi(exp)
			e = esign * n
		}
	}
	digits = strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return false, "", 0, nil
	}
	// value = digits * 10^k minor units.
	k = e - len(frac) + c.Digits
	if k < 0 {
		trimmed := strings.TrimRight(digits, "0")
		if len(digits)-len(trimmed) < -k {
			if c.Code == "" && c.Digits == 0 {
				return bad("not an integer")
			}
			return bad(fmt.Sprintf("more fraction digits than %s has (%d)", c.Code, c.Digits))
		}
		digits = digits[:len(digits)+k]
		k = 0
	}
	return neg, digits, k, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Commission returns amount x bps / 10000 rounded half-to-even to an
// integer number of minor units, computed exactly (128-bit product) for
// every int64 amount. The sign follows amount and bps, and rounding is
// symmetric: Commission(-x, b) == -Commission(x, b). With bps in
// [0, 10000] (the contract range) the result always fits; outside it,
// Commission panics if the result does not fit an int64.
func Commission(amount int64, bps int64) int64 {
	neg := (amount < 0) != (bps < 0)
	a, b := absU(amount), absU(bps)
	hi, lo := bits.Mul64(a, b)
	if hi >= 10000 {
		panic(fmt.Sprintf("money: commission of %d at %d bps overflows int64", amount, bps))
	}
	q, r := bits.Div64(hi, lo, 10000)
	if 2*r > 10000 || (2*r == 10000 && q%2 == 1) {
		q++
	}
	if q > math.MaxInt64+1 || (!neg && q > math.MaxInt64) {
		panic(fmt.Sprintf("money: commission of %d at %d bps overflows int64", amount, bps))
	}
	if neg {
		return int64(-q)
	}
	return int64(q)
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-v) // MinInt64 wraps to 2^63, as intended
	}
	return uint64(v)
}

// Add returns a+b, or ErrOverflow if the sum does not fit an int64.
func Add(a, b int64) (int64, error) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, fmt.Errorf("add %d and %d: %w", a, b, ErrOverflow)
	}
	return s, nil
}

// Format returns minor units as a decimal in c's own digits: "19.99",
// "-0.05", "1500" (JPY), "1.500" (BHD).
func (c Currency) Format(minor int64) string {
	return c.point(minor < 0, strconv.FormatUint(absU(minor), 10))
}

// point writes the magnitude s (decimal minor units) in c's digits, with
// a leading "-" when neg.
func (c Currency) point(neg bool, s string) string {
	if c.Digits > 0 {
		if len(s) <= c.Digits {
			s = strings.Repeat("0", c.Digits-len(s)+1) + s
		}
		s = s[:len(s)-c.Digits] + "." + s[len(s)-c.Digits:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// scale4Limit is 10^18: DECIMAL(18,4) holds |v| < 10^18.
const scale4Limit = 1_000_000_000_000_000_000

// Scale4 returns minor units of c as the unscaled integer of a
// DECIMAL(18,4): minor x 10^(4-Digits). It returns ErrOverflow when the
// value does not fit 18 digits or c has more than 4 digits.
func (c Currency) Scale4(minor int64) (int64, error) {
	if c.Digits > 4 || c.Digits < 0 {
		return 0, fmt.Errorf("scale %s amount %d to 4 digits: %s has %d: %w", c.Code, minor, c.Code, c.Digits, ErrOverflow)
	}
	v := minor
	for i := c.Digits; i < 4; i++ {
		if v >= scale4Limit || v <= -scale4Limit {
			break
		}
		v *= 10
	}
	if v >= scale4Limit || v <= -scale4Limit {
		return 0, fmt.Errorf("scale %s amount %d to DECIMAL(18,4): %w", c.Code, minor, ErrOverflow)
	}
	return v, nil
}

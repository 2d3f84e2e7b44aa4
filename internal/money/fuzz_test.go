package money

import (
	"errors"
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

// refAmountRE is ParseAmount's grammar, written independently:
// [+-] digits [. digits] [(e|E) [+-] digits].
var refAmountRE = regexp.MustCompile(`^[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]+))?$`)

// refMaxExp is the largest exponent ParseAmount reads (4 digits).
const refMaxExp = 9999

var (
	refMinInt64 = big.NewInt(math.MinInt64)
	refMaxInt64 = big.NewInt(math.MaxInt64)
)

// refParse is the reference reading of text as minor units of a currency
// of digits digits, with math/big: the exact value, or the error
// ParseAmount and ParseTotal must return (ErrBadAmount when the text is
// not a number of the grammar, its exponent has more than 4 digits, or the
// value is not a whole number of minor units).
func refParse(text string, digits int) (*big.Int, error) {
	m := refAmountRE.FindStringSubmatch(text)
	if m == nil || m[1] == "" && m[2] == "" {
		return nil, ErrBadAmount
	}
	exp := strings.TrimLeft(m[4], "0")
	if len(exp) > 4 {
		return nil, ErrBadAmount
	}
	r, ok := new(big.Rat).SetString(m[1] + "." + m[2] + "0")
	if !ok {
		panic("reference: " + text)
	}
	e := 0
	for _, c := range exp {
		e = 10*e + int(c-'0')
	}
	if m[3] == "-" {
		e = -e
	}
	e += digits
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(e))), nil))
	if e >= 0 {
		r.Mul(r, scale)
	} else {
		r.Quo(r, scale)
	}
	if !r.IsInt() {
		return nil, ErrBadAmount
	}
	v := r.Num()
	if strings.HasPrefix(text, "-") {
		v.Neg(v)
	}
	return v, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// FuzzParseAmount checks ParseAmount and ParseTotal against the math/big
// reference: the same value to the minor unit, or the same class of error
// (bad text, too many fraction digits, out of int64 / 128 bits). Nothing
// is ever rounded, and nothing a float would accept ("NaN", "Infinity",
// "0x10", "1_000") gets through.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{
		"19.99", "19.999", "19.990", "0", "-0", "-0.00", "+5", "5.", ".5", ".", "", "e5", "1e", "1e+", "1E-2",
		"1.999E1", "NaN", "nan", "Infinity", "-Inf", "1e400", "1e-400", "0e99999", "0x10", "1_000", " 1", "1 ", "１",
		"1234567890123456789012345678901234567890", "9223372036854775807", "-9223372036854775808",
		"92233720368547758.08", "170141183460469231731687303715884105727", "-170141183460469231731687303715884105728",
		"99999999999999.9999", "0.00000000000000000000000000000001e32",
	} {
		for _, d := range []uint8{0, 2, 3, 4} {
			f.Add(s, d)
		}
	}
	f.Fuzz(func(t *testing.T, text string, digits uint8) {
		c := Currency{Code: "TST", Digits: int(digits % 5)}
		want, werr := refParse(text, c.Digits)

		got, err := ParseAmount(text, c)
		switch {
		case werr != nil:
			if !errors.Is(err, werr) {
				t.Fatalf("ParseAmount(%q, %d digits) = %d, %v; want %v", text, c.Digits, got, err, werr)
			}
		case want.Cmp(refMinInt64) < 0 || want.Cmp(refMaxInt64) > 0:
			if !errors.Is(err, ErrOverflow) {
				t.Fatalf("ParseAmount(%q, %d digits) = %d, %v; want ErrOverflow (%s)", text, c.Digits, got, err, want)
			}
		case err != nil || got != want.Int64():
			t.Fatalf("ParseAmount(%q, %d digits) = %d, %v; want %s", text, c.Digits, got, err, want)
		}
		var ae *AmountError
		if err != nil && (!errors.As(err, &ae) || ae.Text != text || ae.Reason == "") {
			t.Fatalf("ParseAmount(%q) error %v: not an *AmountError naming the text with a reason", text, err)
		}

		tot, err := ParseTotal(text, c)
		switch {
		case werr != nil:
			if !errors.Is(err, werr) {
				t.Fatalf("ParseTotal(%q, %d digits) = %s, %v; want %v", text, c.Digits, tot, err, werr)
			}
		case !fits128(want):
			if !errors.Is(err, ErrOverflow) {
				t.Fatalf("ParseTotal(%q, %d digits) = %s, %v; want ErrOverflow (%s)", text, c.Digits, tot, err, want)
			}
		case err != nil || toBig(tot).Cmp(want) != 0:
			t.Fatalf("ParseTotal(%q, %d digits) = %s, %v; want %s", text, c.Digits, tot, err, want)
		default:
			// The canonical text reads back the same.
			if back, err := ParseTotal(c.FormatTotal(tot), c); err != nil || back != tot {
				t.Fatalf("ParseTotal(FormatTotal(%s)) = %s, %v", tot, back, err)
			}
		}
	})
}

// FuzzFormat: every int64 and every 128-bit Total formats to a text that
// parses back exactly, in every minor unit ISO 4217 uses; Decimal38 and
// FromDecimal38 are inverses wherever the value fits DECIMAL(38,4); and
// Commission is the exact half-to-even rounding of amount x bps / 10000.
func FuzzFormat(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 5, -5, 1999, math.MaxInt64, math.MinInt64, 999_999_999_999_999_999} {
		f.Add(v, v>>63, uint64(v), uint8(2), uint16(1000))
	}
	f.Add(int64(1), int64(math.MaxInt64), uint64(math.MaxUint64), uint8(4), uint16(10000))
	f.Add(int64(1), int64(math.MinInt64), uint64(0), uint8(0), uint16(5000))
	f.Fuzz(func(t *testing.T, v, hi int64, lo uint64, digits uint8, bps uint16) {
		c := Currency{Code: "TST", Digits: int(digits % 5)}
		s := c.Format(v)
		if back, err := ParseAmount(s, c); err != nil || back != v {
			t.Fatalf("ParseAmount(Format(%d)) = %q -> %d, %v", v, s, back, err)
		}
		if s != c.FormatTotal(TotalOf(v)) {
			t.Fatalf("Format(%d) = %q, FormatTotal = %q", v, s, c.FormatTotal(TotalOf(v)))
		}

		tot := Total{hi: hi, lo: lo}
		ts := c.FormatTotal(tot)
		if back, err := ParseTotal(ts, c); err != nil || back != tot {
			t.Fatalf("ParseTotal(FormatTotal(%s)) = %q -> %s, %v", tot, ts, back, err)
		}
		scaled := new(big.Int).Mul(toBig(tot), pow10Big(4-c.Digits))
		b, err := c.Decimal38(tot)
		switch fits := new(big.Int).Abs(scaled).Cmp(tenTo38) < 0; {
		case !fits && !errors.Is(err, ErrOverflow):
			t.Fatalf("Decimal38(%s) = %x, %v; want ErrOverflow", tot, b, err)
		case fits && err != nil:
			t.Fatalf("Decimal38(%s): %v", tot, err)
		case fits:
			if b != refBytes(scaled) {
				t.Fatalf("Decimal38(%s) = %x, want %x", tot, b, refBytes(scaled))
			}
			if back, err := c.FromDecimal38(b); err != nil || back != tot {
				t.Fatalf("FromDecimal38(Decimal38(%s)) = %s, %v", tot, back, err)
			}
		}

		b4 := int64(bps % 10001)
		com := Commission(v, b4)
		if want := bigCommission(v, b4); big.NewInt(com).Cmp(want) != 0 {
			t.Fatalf("Commission(%d, %d) = %d, want %s", v, b4, com, want)
		}
		if v != math.MinInt64 && Commission(-v, b4) != -com {
			t.Fatalf("Commission(%d, %d) is not symmetric", v, b4)
		}
	})
}

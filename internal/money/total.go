package money

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Total is a signed 128-bit number of minor units, for sums that can
// exceed an int64 (a period's gross over many transactions) and for the
// DECIMAL(38,4) columns of summary files. The zero value is 0. Totals are
// comparable with ==. A Total carries no currency: the caller keeps one
// Total per currency.
type Total struct {
	hi int64  // two's complement high half
	lo uint64 // low half
}

// TotalOf returns minor as a Total.
func TotalOf(minor int64) Total { return Total{hi: minor >> 63, lo: uint64(minor)} }

// Add returns t+u, and false when the sum does not fit 128 bits (the
// result is then unspecified).
func (t Total) Add(u Total) (Total, bool) {
	lo, carry := bits.Add64(t.lo, u.lo, 0)
	h, _ := bits.Add64(uint64(t.hi), uint64(u.hi), carry)
	hi := int64(h)
	// Overflow when both operands have the same sign and the sum another.
	return Total{hi, lo}, (t.hi^hi)&(u.hi^hi) >= 0
}

// Sub returns t-u, and false when the difference does not fit 128 bits
// (the result is then unspecified).
func (t Total) Sub(u Total) (Total, bool) {
	lo, borrow := bits.Sub64(t.lo, u.lo, 0)
	h, _ := bits.Sub64(uint64(t.hi), uint64(u.hi), borrow)
	hi := int64(h)
	// Overflow when the operands differ in sign and the result has u's.
	return Total{hi, lo}, (t.hi^u.hi)&(t.hi^hi) >= 0
}

// Neg returns -t. The most negative Total, -2^127, has no positive
// counterpart: Neg returns it unchanged (no sum of int64 amounts gets near
// it).
func (t Total) Neg() Total {
	lo, borrow := bits.Sub64(0, t.lo, 0)
	h, _ := bits.Sub64(0, uint64(t.hi), borrow)
	return Total{int64(h), lo}
}

// Sign returns -1, 0 or +1.
func (t Total) Sign() int {
	switch {
	case t.hi < 0:
		return -1
	case t.hi == 0 && t.lo == 0:
		return 0
	}
	return 1
}

// IsZero reports whether t is 0.
func (t Total) IsZero() bool { return t.hi == 0 && t.lo == 0 }

// Cmp returns -1, 0 or +1 as t is less than, equal to or greater than u.
func (t Total) Cmp(u Total) int {
	switch {
	case t.hi < u.hi || t.hi == u.hi && t.lo < u.lo:
		return -1
	case t == u:
		return 0
	}
	return 1
}

// Int64 returns t as an int64, and false when it does not fit.
func (t Total) Int64() (int64, bool) {
	return int64(t.lo), t.hi == int64(t.lo)>>63
}

// String returns t as a plain integer of minor units: "-1234".
func (t Total) String() string {
	s := t.abs().String()
	if t.hi < 0 {
		return "-" + s
	}
	return s
}

// FormatTotal returns t as an exact decimal in c's digits, like Format:
// "19.99", "-0.05", "1500" (JPY), "123456789012345678901.234" (BHD).
func (c Currency) FormatTotal(t Total) string {
	return c.point(t.hi < 0, t.abs().String())
}

// ParseTotal parses the exact decimal text of an amount in major units of
// c into a Total: the inverse of FormatTotal. It takes ParseAmount's
// grammar ("19.99", "-0.05", "19.9900", "1.5e3") and never rounds: more
// fraction digits than c has ("19.999" USD) is an ErrBadAmount, a value
// beyond 128 bits an ErrOverflow. Errors are *AmountError naming the text.
func ParseTotal(text string, c Currency) (Total, error) {
	neg, digits, k, err := scanMinor(text, c)
	if err != nil || digits == "" {
		return Total{}, err
	}
	overflow := &AmountError{Text: text, Reason: "out of range", Err: ErrOverflow}
	if len(digits)+k > 39 { // 2^127 has 39 digits
		return Total{}, overflow
	}
	var u u128
	ok := true
	for i := 0; i < len(digits)+k && ok; i++ {
		d := uint64(0)
		if i < len(digits) {
			d = uint64(digits[i] - '0')
		}
		u, ok = u.mulAdd(10, d)
	}
	t, fits := fromU128(neg, u)
	if !ok || !fits {
		return Total{}, overflow
	}
	return t, nil
}

// decimal38Digits is the precision of a DECIMAL(38,4): |unscaled| < 10^38.
const decimal38Digits = 38

// Decimal38 returns t, minor units of c, as the unscaled value of a
// DECIMAL(38,4) (t x 10^(4-c.Digits)) in 16 bytes, big-endian two's
// complement: the physical value of a Parquet FIXED_LEN_BYTE_ARRAY(16)
// decimal column. It returns ErrOverflow when the value has 38 digits or
// more, or c has more than 4 digits.
func (c Currency) Decimal38(t Total) ([16]byte, error) {
	var b [16]byte
	if c.Digits < 0 || c.Digits > 4 {
		return b, fmt.Errorf("%s amount %s as DECIMAL(38,4): %s has %d minor digits, more than 4: %w", c.Code, t, c.Code, c.Digits, ErrOverflow)
	}
	a := t.abs()
	if a.cmp(pow10u128[decimal38Digits-(4-c.Digits)]) >= 0 {
		return b, fmt.Errorf("%s amount %s as DECIMAL(38,4): more than 38 digits: %w", c.Code, c.FormatTotal(t), ErrOverflow)
	}
	v, _ := a.mulAdd(pow10u128[4-c.Digits].lo, 0) // < 10^38: no overflow
	s, _ := fromU128(t.hi < 0, v)
	binary.BigEndian.PutUint64(b[:8], uint64(s.hi))
	binary.BigEndian.PutUint64(b[8:], s.lo)
	return b, nil
}

// FromDecimal38 is the inverse of Decimal38: it reads the 16-byte
// unscaled value of a DECIMAL(38,4) as minor units of c. It returns
// ErrOverflow for a value of 38 digits or more (not a DECIMAL(38,4)) or a
// currency of more than 4 digits, and ErrBadAmount when the value is not a
// whole number of c's minor units (19.9950 in USD).
func (c Currency) FromDecimal38(b [16]byte) (Total, error) {
	v := Total{hi: int64(binary.BigEndian.Uint64(b[:8])), lo: binary.BigEndian.Uint64(b[8:])}
	four := Currency{Code: c.Code, Digits: 4}
	if c.Digits < 0 || c.Digits > 4 {
		return Total{}, fmt.Errorf("DECIMAL(38,4) %s as %s: %s has %d minor digits, more than 4: %w", four.FormatTotal(v), c.Code, c.Code, c.Digits, ErrOverflow)
	}
	a := v.abs()
	if a.cmp(pow10u128[decimal38Digits]) >= 0 {
		return Total{}, fmt.Errorf("DECIMAL(38,4) %s as %s: more than 38 digits: %w", four.FormatTotal(v), c.Code, ErrOverflow)
	}
	q, r := a.divmod(pow10u128[4-c.Digits].lo)
	if r != 0 {
		return Total{}, fmt.Errorf("DECIMAL(38,4) %s as %s: not a whole number of %s minor units (%d digits): %w", four.FormatTotal(v), c.Code, c.Code, c.Digits, ErrBadAmount)
	}
	t, _ := fromU128(v.hi < 0, q)
	return t, nil
}

// u128 is an unsigned 128-bit integer, the magnitude of a Total.
type u128 struct{ hi, lo uint64 }

// pow10u128[i] is 10^i, for i in 0..38.
var pow10u128 = func() [decimal38Digits + 1]u128 {
	var p [decimal38Digits + 1]u128
	p[0] = u128{0, 1}
	for i := 1; i < len(p); i++ {
		p[i], _ = p[i-1].mulAdd(10, 0)
	}
	return p
}()

// abs returns |t|; |-2^127| is 2^127, which a u128 holds.
func (t Total) abs() u128 {
	if t.hi < 0 {
		n := t.Neg()
		return u128{uint64(n.hi), n.lo}
	}
	return u128{uint64(t.hi), t.lo}
}

// fromU128 returns -u when neg, else u, and false when that does not fit
// a Total.
func fromU128(neg bool, u u128) (Total, bool) {
	t := Total{int64(u.hi), u.lo}
	if !neg {
		return t, t.hi >= 0
	}
	if u.hi > 1<<63 || u.hi == 1<<63 && u.lo != 0 {
		return Total{}, false
	}
	return t.Neg(), true // -2^127 stays itself, as wanted
}

// mulAdd returns u*m + a, and false on overflow.
func (u u128) mulAdd(m, a uint64) (u128, bool) {
	h1, lo := bits.Mul64(u.lo, m)
	h2, hi := bits.Mul64(u.hi, m)
	hi, c1 := bits.Add64(hi, h1, 0)
	lo, c2 := bits.Add64(lo, a, 0)
	hi, c3 := bits.Add64(hi, 0, c2)
	return u128{hi, lo}, h2 == 0 && c1 == 0 && c3 == 0
}

// divmod returns u/d and u%d; d must not be 0.
func (u u128) divmod(d uint64) (u128, uint64) {
	qhi, r := u.hi/d, u.hi%d
	qlo, r := bits.Div64(r, u.lo, d)
	return u128{qhi, qlo}, r
}

func (u u128) cmp(v u128) int {
	switch {
	case u.hi < v.hi || u.hi == v.hi && u.lo < v.lo:
		return -1
	case u == v:
		return 0
	}
	return 1
}

// chunk is 10^19, the largest power of ten in a uint64.
const chunk = 10_000_000_000_000_000_000

func (u u128) String() string {
	if u.hi == 0 {
		return strconv.FormatUint(u.lo, 10)
	}
	// At most 39 digits: 2 or 3 chunks of 19, most significant first.
	q, low := u.divmod(chunk)
	var b strings.Builder
	if q.hi == 0 {
		b.WriteString(strconv.FormatUint(q.lo, 10))
	} else {
		top, mid := q.divmod(chunk)
		b.WriteString(strconv.FormatUint(top.lo, 10))
		writePadded(&b, mid)
	}
	writePadded(&b, low)
	return b.String()
}

func writePadded(b *strings.Builder, v uint64) {
	s := strconv.FormatUint(v, 10)
	b.WriteString(strings.Repeat("0", 19-len(s)))
	b.WriteString(s)
}

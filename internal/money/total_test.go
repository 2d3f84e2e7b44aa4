package money

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

var (
	two64   = new(big.Int).Lsh(big.NewInt(1), 64)
	two128  = new(big.Int).Lsh(big.NewInt(1), 128)
	max128  = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
	min128  = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
	tenTo38 = pow10Big(38)
)

func pow10Big(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// toBig is the reference reading of a Total: hi * 2^64 + lo.
func toBig(t Total) *big.Int {
	b := new(big.Int).Mul(big.NewInt(t.hi), two64)
	return b.Add(b, new(big.Int).SetUint64(t.lo))
}

// fromBig builds the Total of v, which must fit 128 bits.
func fromBig(tb testing.TB, v *big.Int) Total {
	tb.Helper()
	if v.Cmp(min128) < 0 || v.Cmp(max128) > 0 {
		tb.Fatalf("fromBig(%s): out of range", v)
	}
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, two128)
	}
	lo := new(big.Int).And(u, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(u, 64).Uint64()
	return Total{hi: int64(hi), lo: lo}
}

func bigOf(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad big " + s)
	}
	return v
}

func fits128(v *big.Int) bool { return v.Cmp(min128) >= 0 && v.Cmp(max128) <= 0 }

// boundaries are the values where the 128-bit arithmetic has its edges:
// int64 limits, the carry between lo and hi, 10^38 and the 128-bit limits.
func boundaries() []*big.Int {
	var out []*big.Int
	for _, s := range []string{
		"0", "1", "-1", "2", "-2",
		"9223372036854775807", "-9223372036854775808", // int64
		"9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "18446744073709551617", // 2^64
		"-18446744073709551615", "-18446744073709551616", "-18446744073709551617",
		"36893488147419103232", "-36893488147419103232", // 2^65
		"99999999999999999999999999999999999999", "100000000000000000000000000000000000000", // 10^38
		"-99999999999999999999999999999999999999", "-100000000000000000000000000000000000000",
		"9999999999999999999999999999999999", "10000000000000000000000000000000000", // 10^34
		"-9999999999999999999999999999999999", "-10000000000000000000000000000000000",
	} {
		out = append(out, bigOf(s))
	}
	return append(out, max128, new(big.Int).Sub(max128, big.NewInt(1)), min128, new(big.Int).Add(min128, big.NewInt(1)))
}

func TestTotalOf(t *testing.T) {
	for _, m := range []int64{0, 1, -1, 1999, -1999, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		got := TotalOf(m)
		if toBig(got).Cmp(big.NewInt(m)) != 0 {
			t.Errorf("TotalOf(%d) = %s", m, toBig(got))
		}
		if back, ok := got.Int64(); !ok || back != m {
			t.Errorf("TotalOf(%d).Int64() = %d, %v", m, back, ok)
		}
	}
	if (Total{}) != TotalOf(0) || !(Total{}).IsZero() || (Total{}).String() != "0" {
		t.Error("the zero Total is not 0")
	}
}

func TestTotalAddSub(t *testing.T) {
	tests := []struct {
		a, b string
		sum  string // "" when the sum overflows
		diff string // "" when the difference overflows
	}{
		{"1", "2", "3", "-1"},
		{"9223372036854775807", "1", "9223372036854775808", "9223372036854775806"},
		{"-9223372036854775808", "-1", "-9223372036854775809", "-9223372036854775807"},
		{"-9223372036854775808", "9223372036854775807", "-1", "-18446744073709551615"},
		{"18446744073709551615", "1", "18446744073709551616", "18446744073709551614"},    // carry lo -> hi
		{"18446744073709551616", "-1", "18446744073709551615", "18446744073709551617"},   // borrow
		{"-18446744073709551616", "1", "-18446744073709551615", "-18446744073709551617"}, // borrow hi
		{"170141183460469231731687303715884105727", "0", "170141183460469231731687303715884105727", "170141183460469231731687303715884105727"},
		{"170141183460469231731687303715884105727", "1", "", "170141183460469231731687303715884105726"},
		{"170141183460469231731687303715884105727", "-1", "170141183460469231731687303715884105726", ""},
		{"-170141183460469231731687303715884105728", "-1", "", "-170141183460469231731687303715884105727"},
		{"-170141183460469231731687303715884105728", "1", "-170141183460469231731687303715884105727", ""},
		{"-170141183460469231731687303715884105728", "-170141183460469231731687303715884105728", "", "0"},
		{"170141183460469231731687303715884105727", "170141183460469231731687303715884105727", "", "0"},
		{"-170141183460469231731687303715884105728", "170141183460469231731687303715884105727", "-1", ""},
		{"0", "-170141183460469231731687303715884105728", "-170141183460469231731687303715884105728", ""},
		{"-1", "-170141183460469231731687303715884105728", "", "170141183460469231731687303715884105727"},
	}
	for _, tt := range tests {
		a, b := fromBig(t, bigOf(tt.a)), fromBig(t, bigOf(tt.b))
		sum, ok := a.Add(b)
		if ok != (tt.sum != "") || ok && sum.String() != tt.sum {
			t.Errorf("%s + %s = %s, %v; want %q", tt.a, tt.b, sum, ok, tt.sum)
		}
		diff, ok := a.Sub(b)
		if ok != (tt.diff != "") || ok && diff.String() != tt.diff {
			t.Errorf("%s - %s = %s, %v; want %q", tt.a, tt.b, diff, ok, tt.diff)
		}
	}
}

// checkOps compares every operation on a and b with math/big.
func checkOps(t *testing.T, x, y *big.Int) {
	t.Helper()
	a, b := fromBig(t, x), fromBig(t, y)
	if a.String() != x.String() {
		t.Fatalf("String() = %s, want %s", a, x)
	}
	want := new(big.Int).Add(x, y)
	if got, ok := a.Add(b); ok != fits128(want) || ok && toBig(got).Cmp(want) != 0 {
		t.Fatalf("%s + %s = %s, %v; want %s", x, y, got, ok, want)
	}
	want = new(big.Int).Sub(x, y)
	if got, ok := a.Sub(b); ok != fits128(want) || ok && toBig(got).Cmp(want) != 0 {
		t.Fatalf("%s - %s = %s, %v; want %s", x, y, got, ok, want)
	}
	if got := a.Cmp(b); got != x.Cmp(y) {
		t.Fatalf("Cmp(%s, %s) = %d", x, y, got)
	}
	if a.Sign() != x.Sign() || a.IsZero() != (x.Sign() == 0) {
		t.Fatalf("Sign(%s) = %d, IsZero %v", x, a.Sign(), a.IsZero())
	}
	if x.Cmp(min128) != 0 {
		if got := a.Neg(); toBig(got).Cmp(new(big.Int).Neg(x)) != 0 {
			t.Fatalf("Neg(%s) = %s", x, got)
		}
	}
	if v, ok := a.Int64(); ok != x.IsInt64() || ok && v != x.Int64() {
		t.Fatalf("Int64(%s) = %d, %v", x, v, ok)
	}
	for d := 0; d <= 4; d++ {
		c := Currency{Code: "T" + string(rune('0'+d)), Digits: d}
		s := c.FormatTotal(a)
		if want := refFormat(x, d); s != want {
			t.Fatalf("FormatTotal(%s, %d digits) = %s, want %s", x, d, s, want)
		}
		if back, err := ParseTotal(s, c); err != nil || back != a {
			t.Fatalf("ParseTotal(%q, %d digits) = %s, %v; want %s", s, d, back, err, x)
		}
		checkDecimal38(t, c, x)
	}
}

// refFormat writes v minor units with d fraction digits via math/big.
func refFormat(v *big.Int, d int) string {
	abs := new(big.Int).Abs(v)
	q, r := new(big.Int).QuoRem(abs, pow10Big(d), new(big.Int))
	s := q.String()
	if d > 0 {
		frac := r.String()
		s += "." + strings.Repeat("0", d-len(frac)) + frac
	}
	if v.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// checkDecimal38 compares Decimal38 and FromDecimal38 with math/big.
func checkDecimal38(t *testing.T, c Currency, x *big.Int) {
	t.Helper()
	a := fromBig(t, x)
	unscaled := new(big.Int).Mul(x, pow10Big(4-c.Digits))
	got, err := c.Decimal38(a)
	if new(big.Int).Abs(unscaled).Cmp(tenTo38) >= 0 {
		if !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), c.Code) {
			t.Fatalf("%s.Decimal38(%s) = %x, %v; want ErrOverflow", c.Code, x, got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s.Decimal38(%s): %v", c.Code, x, err)
	}
	if want := refBytes(unscaled); got != want {
		t.Fatalf("%s.Decimal38(%s) = %x, want %x", c.Code, x, got, want)
	}
	back, err := c.FromDecimal38(got)
	if err != nil || back != a {
		t.Fatalf("%s.FromDecimal38(%x) = %s, %v; want %s", c.Code, got, back, err, x)
	}
}

// refBytes is v as 16 bytes of big-endian two's complement.
func refBytes(v *big.Int) [16]byte {
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, two128)
	}
	var b [16]byte
	u.FillBytes(b[:])
	return b
}

func TestTotalBoundaries(t *testing.T) {
	bs := boundaries()
	for _, x := range bs {
		for _, y := range bs {
			checkOps(t, x, y)
		}
	}
}

// randomBig returns a value spread over every magnitude up to 128 bits.
func randomBig(r *rand.Rand) *big.Int {
	v := new(big.Int).SetUint64(r.Uint64())
	v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(r.Uint64()))
	v.Rsh(v, uint(r.IntN(128)))
	if r.IntN(2) == 0 {
		v.Neg(v)
		v.Sub(v, big.NewInt(int64(r.IntN(2)))) // reach -2^127 too
	}
	if !fits128(v) {
		v.Rsh(v, 1)
	}
	return v
}

func TestTotalRandom(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		r := rand.New(rand.NewPCG(seed, 4217))
		for i := 0; i < 3000; i++ {
			checkOps(t, randomBig(r), randomBig(r))
		}
	}
}

// TestTotalSums adds many int64 amounts, as a period total does, past the
// int64 range and back.
func TestTotalSums(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var sum Total
	ref := new(big.Int)
	for i := 0; i < 10000; i++ {
		m := int64(r.Uint64())
		if i%3 == 0 {
			m = math.MaxInt64
		}
		var ok bool
		if sum, ok = sum.Add(TotalOf(m)); !ok {
			t.Fatal("overflow")
		}
		ref.Add(ref, big.NewInt(m))
	}
	if toBig(sum).Cmp(ref) != 0 {
		t.Fatalf("sum = %s, want %s", sum, ref)
	}
	if _, ok := sum.Int64(); ok != ref.IsInt64() || ok {
		t.Errorf("Int64 fits = %v, want %v", ok, ref.IsInt64())
	}
}

func TestFormatTotal(t *testing.T) {
	tests := []struct {
		c    Currency
		v    string
		want string
	}{
		{usd, "1999", "19.99"},
		{usd, "-5", "-0.05"},
		{usd, "0", "0.00"},
		{jpy, "1500", "1500"},
		{jpy, "-1500", "-1500"},
		{bhd, "123456789012345678901234", "123456789012345678901.234"},
		{clf, "1", "0.0001"},
		{clf, "-170141183460469231731687303715884105728", "-17014118346046923173168730371588410.5728"},
		{jpy, "170141183460469231731687303715884105727", "170141183460469231731687303715884105727"},
		{usd, "18446744073709551616", "184467440737095516.16"},
		{usd, "10000000000000000000", "100000000000000000.00"},
		{usd, "100000000000000000000000000000000000000", "1000000000000000000000000000000000000.00"},
	}
	for _, tt := range tests {
		a := fromBig(t, bigOf(tt.v))
		if got := tt.c.FormatTotal(a); got != tt.want {
			t.Errorf("%s.FormatTotal(%s) = %s, want %s", tt.c.Code, tt.v, got, tt.want)
		}
		if a.String() != tt.v {
			t.Errorf("String() = %s, want %s", a, tt.v)
		}
	}
	for _, m := range []int64{0, 1, -1, 1999, -5, math.MaxInt64, math.MinInt64} {
		for _, c := range []Currency{usd, jpy, bhd, clf} {
			if got, want := c.FormatTotal(TotalOf(m)), c.Format(m); got != want {
				t.Errorf("%s.FormatTotal(%d) = %s, Format gives %s", c.Code, m, got, want)
			}
		}
	}
}

func TestParseTotal(t *testing.T) {
	tests := []struct {
		text string
		c    Currency
		want string // minor units
		err  error
	}{
		{"19.99", usd, "1999", nil},
		{"-0.05", usd, "-5", nil},
		{"19.9900", usd, "1999", nil}, // DECIMAL(38,4) text
		{"+7", usd, "700", nil},
		{"1.5e3", jpy, "1500", nil},
		{"0", usd, "0", nil},
		{"-0.00", usd, "0", nil},
		{"1701411834604692317316873037158841057.27", usd, "170141183460469231731687303715884105727", nil},
		{"-1701411834604692317316873037158841057.28", usd, "-170141183460469231731687303715884105728", nil},
		{"17014118346046923173168730371588410572.7e1", jpy, "170141183460469231731687303715884105727", nil},
		{"0001701411834604692317316873037158841057.27", usd, "170141183460469231731687303715884105727", nil},

		{"19.999", usd, "", ErrBadAmount},
		{"0.5", jpy, "", ErrBadAmount},
		{"", usd, "", ErrBadAmount},
		{"1,000", usd, "", ErrBadAmount},
		{"12e", usd, "", ErrBadAmount},
		{"1701411834604692317316873037158841057.28", usd, "", ErrOverflow},
		{"-1701411834604692317316873037158841057.29", usd, "", ErrOverflow},
		{"340282366920938463463374607431768211456", jpy, "", ErrOverflow}, // 2^128
		{"1e39", jpy, "", ErrOverflow},
		{"1e200", usd, "", ErrOverflow},
	}
	for _, tt := range tests {
		got, err := ParseTotal(tt.text, tt.c)
		if tt.err == nil {
			if err != nil || got.String() != tt.want {
				t.Errorf("ParseTotal(%q, %s) = %s, %v; want %s", tt.text, tt.c.Code, got, err, tt.want)
			}
			continue
		}
		var ae *AmountError
		if !errors.Is(err, tt.err) || !errors.As(err, &ae) || ae.Text != tt.text || !strings.Contains(err.Error(), `"`+tt.text+`"`) {
			t.Errorf("ParseTotal(%q, %s) = %s, %v; want %v naming the text", tt.text, tt.c.Code, got, err, tt.err)
		}
	}
	_, err := ParseTotal("19.999", usd)
	if want := `amount "19.999": more fraction digits than USD has (2)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestDecimal38(t *testing.T) {
	// The largest value of each digit count fits; one more does not.
	for d := 0; d <= 4; d++ {
		c := Currency{Code: "T" + string(rune('0'+d)), Digits: d}
		limit := pow10Big(34 + d) // |minor| < 10^(34+d) <=> |unscaled| < 10^38
		for _, x := range []*big.Int{
			new(big.Int).Sub(limit, big.NewInt(1)), new(big.Int).Sub(big.NewInt(1), limit),
			limit, new(big.Int).Neg(limit), big.NewInt(1), big.NewInt(-1), big.NewInt(0),
		} {
			checkDecimal38(t, c, x)
		}
	}
	tests := []struct {
		c    Currency
		v    int64
		want string // hex
	}{
		{usd, 1999, "00000000000000000000000000030cdc"}, // 199900
		{usd, -1, "ffffffffffffffffffffffffffffff9c"},   // -100
		{jpy, 1, "00000000000000000000000000002710"},    // 10000
		{clf, -1, "ffffffffffffffffffffffffffffffff"},
		{bhd, 0, "00000000000000000000000000000000"},
	}
	for _, tt := range tests {
		b, err := tt.c.Decimal38(TotalOf(tt.v))
		if err != nil || hexOf(b) != tt.want {
			t.Errorf("%s.Decimal38(%d) = %x, %v; want %s", tt.c.Code, tt.v, b, err, tt.want)
		}
	}
	if _, err := (Currency{Code: "XYZ", Digits: 5}).Decimal38(TotalOf(1)); !errors.Is(err, ErrOverflow) {
		t.Errorf("5 digits: err = %v, want ErrOverflow", err)
	}
}

func hexOf(b [16]byte) string {
	const digits = "0123456789abcdef"
	var s strings.Builder
	for _, c := range b {
		s.WriteByte(digits[c>>4])
		s.WriteByte(digits[c&15])
	}
	return s.String()
}

func TestFromDecimal38(t *testing.T) {
	tests := []struct {
		c     Currency
		value string // unscaled DECIMAL(38,4)
		want  string // minor units, or "" for an error
		err   error
	}{
		{usd, "199900", "1999", nil},
		{usd, "-500", "-5", nil},
		{usd, "199950", "", ErrBadAmount}, // 19.9950 is not whole cents
		{usd, "-1", "", ErrBadAmount},
		{jpy, "15000000", "1500", nil},
		{jpy, "15000001", "", ErrBadAmount},
		{clf, "99999999999999999999999999999999999999", "99999999999999999999999999999999999999", nil},
		{clf, "-99999999999999999999999999999999999999", "-99999999999999999999999999999999999999", nil},
		{clf, "100000000000000000000000000000000000000", "", ErrOverflow},
		{clf, "-100000000000000000000000000000000000000", "", ErrOverflow},
		{usd, "-170141183460469231731687303715884105728", "", ErrOverflow},
		{usd, "170141183460469231731687303715884105727", "", ErrOverflow},
		{usd, "99999999999999999999999999999999999900", "999999999999999999999999999999999999", nil},
		{Currency{Code: "XYZ", Digits: 5}, "0", "", ErrOverflow},
	}
	for _, tt := range tests {
		b := refBytes(bigOf(tt.value))
		got, err := tt.c.FromDecimal38(b)
		if tt.err == nil {
			if err != nil || got.String() != tt.want {
				t.Errorf("%s.FromDecimal38(%s) = %s, %v; want %s", tt.c.Code, tt.value, got, err, tt.want)
			}
			continue
		}
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.c.Code) {
			t.Errorf("%s.FromDecimal38(%s) = %s, %v; want %v", tt.c.Code, tt.value, got, err, tt.err)
		}
	}
	_, err := usd.FromDecimal38(refBytes(big.NewInt(199950)))
	if want := "DECIMAL(38,4) 19.9950 as USD: not a whole number of USD minor units (2 digits): bad amount"; err == nil || err.Error() != want {
		t.Errorf("message %v, want %s", err, want)
	}
}

func TestTotalNegMin(t *testing.T) {
	m := fromBig(t, min128)
	if m.Neg() != m {
		t.Errorf("Neg(-2^127) = %s, want itself", m.Neg())
	}
}

func TestU128String(t *testing.T) {
	for _, u := range []u128{{0, 0}, {0, math.MaxUint64}, {1, 0}, {math.MaxUint64, math.MaxUint64}, {1 << 63, 0}, {0x4b3b4ca85a86c47a, 0x098a224000000000}} {
		want := new(big.Int).Mul(new(big.Int).SetUint64(u.hi), two64)
		want.Add(want, new(big.Int).SetUint64(u.lo))
		if got := u.String(); got != want.String() {
			t.Errorf("u128{%#x, %#x}.String() = %s, want %s", u.hi, u.lo, got, want)
		}
	}
}

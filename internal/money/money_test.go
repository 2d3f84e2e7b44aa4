package money

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

var (
	usd = Currency{Code: "USD", Digits: 2}
	jpy = Currency{Code: "JPY", Digits: 0}
	bhd = Currency{Code: "BHD", Digits: 3}
	clf = Currency{Code: "CLF", Digits: 4}
)

func TestParseAmount(t *testing.T) {
	tests := []struct {
		text string
		c    Currency
		want int64
		err  error // nil, ErrBadAmount or ErrOverflow
	}{
		{"19.99", usd, 1999, nil},
		{"1500", usd, 150000, nil},
		{"1500", jpy, 1500, nil},
		{"0.5", usd, 50, nil},
		{"1.50", usd, 150, nil},
		{"19.990", usd, 1999, nil},
		{"19.99000000000000000000000000", usd, 1999, nil},
		{"1e2", usd, 10000, nil},
		{"1E2", jpy, 100, nil},
		{"1.999E1", usd, 1999, nil},
		{"1999e-2", usd, 1999, nil},
		{"1999E-02", usd, 1999, nil},
		{"1.5e+1", jpy, 15, nil},
		{"12300e-2", jpy, 123, nil},
		{"0.001", bhd, 1, nil},
		{"1.500", bhd, 1500, nil},
		{"0.0001", clf, 1, nil},
		{"-0.05", usd, -5, nil},
		{"+7", usd, 700, nil},
		{"0", usd, 0, nil},
		{"-0", usd, 0, nil},
		{"0.000", jpy, 0, nil},
		{"0e9999", usd, 0, nil},
		{"000019.99", usd, 1999, nil},
		{".5", usd, 50, nil},
		{"5.", usd, 500, nil},
		{"92233720368547758.07", usd, math.MaxInt64, nil},
		{"-92233720368547758.08", usd, math.MinInt64, nil},
		{"9223372036854775807", jpy, math.MaxInt64, nil},
		{"9.223372036854775807e18", jpy, math.MaxInt64, nil},

		{"19.999", usd, 0, ErrBadAmount},
		{"0.5", jpy, 0, ErrBadAmount},
		{"1.0001", bhd, 0, ErrBadAmount},
		{"1999e-3", usd, 0, ErrBadAmount},
		{"1e-1", jpy, 0, ErrBadAmount},
		{"", usd, 0, ErrBadAmount},
		{".", usd, 0, ErrBadAmount},
		{"-", usd, 0, ErrBadAmount},
		{"+-1", usd, 0, ErrBadAmount},
		{"1.2.3", usd, 0, ErrBadAmount},
		{"1,000", usd, 0, ErrBadAmount},
		{"1_000", usd, 0, ErrBadAmount},
		{" 1", usd, 0, ErrBadAmount},
		{"1 ", usd, 0, ErrBadAmount},
		{"$1", usd, 0, ErrBadAmount},
		{"1e", usd, 0, ErrBadAmount},
		{"1e+", usd, 0, ErrBadAmount},
		{"e5", usd, 0, ErrBadAmount},
		{"1e5.0", usd, 0, ErrBadAmount},
		{"0x10", usd, 0, ErrBadAmount},
		{"NaN", usd, 0, ErrBadAmount},
		{"Inf", usd, 0, ErrBadAmount},
		{"١٢", usd, 0, ErrBadAmount}, // Arabic-Indic digits
		{"1e99999", usd, 0, ErrBadAmount},

		{"92233720368547758.08", usd, 0, ErrOverflow},
		{"-92233720368547758.09", usd, 0, ErrOverflow},
		{"9223372036854775808", jpy, 0, ErrOverflow},
		{"99999999999999999999", jpy, 0, ErrOverflow},
		{"1e19", jpy, 0, ErrOverflow},
		{"1e126", usd, 0, ErrOverflow},
	}
	for _, tt := range tests {
		got, err := ParseAmount(tt.text, tt.c)
		if tt.err == nil {
			if err != nil || got != tt.want {
				t.Errorf("ParseAmount(%q, %s) = %d, %v; want %d", tt.text, tt.c.Code, got, err, tt.want)
			}
			continue
		}
		var ae *AmountError
		if !errors.Is(err, tt.err) || !errors.As(err, &ae) || ae.Text != tt.text {
			t.Errorf("ParseAmount(%q, %s) = %d, %v; want %v", tt.text, tt.c.Code, got, err, tt.err)
		}
	}
}

func TestParseAmountMessage(t *testing.T) {
	_, err := ParseAmount("19.999", usd)
	if want := `amount "19.999": more fraction digits than USD has (2)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	_, err = ParseAmount("2.5", Currency{})
	if want := `amount "2.5": not an integer`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// bigCommission is the reference: amount*bps/10000 half-to-even via big.Rat-free integer math.
func bigCommission(amount, bps int64) *big.Int {
	p := new(big.Int).Mul(big.NewInt(amount), big.NewInt(bps))
	neg := p.Sign() < 0
	p.Abs(p)
	q, r := new(big.Int).QuoRem(p, big.NewInt(10000), new(big.Int))
	r2 := new(big.Int).Mul(r, big.NewInt(2))
	if c := r2.Cmp(big.NewInt(10000)); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return q
}

func TestCommission(t *testing.T) {
	tests := []struct{ amount, bps, want int64 }{
		{1999, 1000, 200}, // 199.9
		{1995, 1000, 200}, // 199.5 -> even 200
		{1985, 1000, 198}, // 198.5 -> even 198
		{1, 5000, 0},      // 0.5 -> 0
		{3, 5000, 2},      // 1.5 -> 2
		{5, 5000, 2},      // 2.5 -> 2
		{7, 5000, 4},      // 3.5 -> 4
		{10000, 1, 1},     // exact
		{14999, 1, 1},     // 1.4999
		{15000, 1, 2},     // 1.5 -> 2
		{25000, 1, 2},     // 2.5 -> 2
		{25001, 1, 3},     // 2.5001
		{1999, 0, 0},      //
		{1999, 10000, 1999},
		{-1995, 1000, -200},
		{-1985, 1000, -198},
		{-5, 5000, -2},
		{-25001, 1, -3},
		{math.MaxInt64, 10000, math.MaxInt64},
		{math.MinInt64, 10000, math.MinInt64},
		{math.MaxInt64, 5000, 4611686018427387904}, // 4611686018427387903.5 -> even
		{math.MaxInt64, 1, 922337203685478},        // 922337203685477.5807
		{math.MinInt64, 1, -922337203685478},
	}
	for _, tt := range tests {
		if got := Commission(tt.amount, tt.bps); got != tt.want {
			t.Errorf("Commission(%d, %d) = %d, want %d", tt.amount, tt.bps, got, tt.want)
		}
		if want := bigCommission(tt.amount, tt.bps); want.Int64() != tt.want || !want.IsInt64() {
			t.Errorf("reference Commission(%d, %d) = %s, table says %d", tt.amount, tt.bps, want, tt.want)
		}
	}
}

func TestCommissionRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		a := int64(r.Uint64())
		if i%2 == 0 {
			a >>= r.IntN(63)
		}
		b := r.Int64N(10001)
		got := Commission(a, b)
		if want := bigCommission(a, b); !want.IsInt64() || want.Int64() != got {
			t.Fatalf("Commission(%d, %d) = %d, want %s", a, b, got, want)
		}
		if a != math.MinInt64 && Commission(-a, b) != -got {
			t.Fatalf("Commission(%d, %d) = %d, not -Commission(%d, %d)", -a, b, Commission(-a, b), a, b)
		}
	}
}

func TestCommissionOverflowPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Commission(MaxInt64, 20000) did not panic")
		}
	}()
	Commission(math.MaxInt64, 20000)
}

func TestAdd(t *testing.T) {
	tests := []struct {
		a, b, want int64
		overflow   bool
	}{
		{1, 2, 3, false},
		{-5, 3, -2, false},
		{math.MaxInt64, 0, math.MaxInt64, false},
		{math.MaxInt64 - 1, 1, math.MaxInt64, false},
		{math.MaxInt64, 1, 0, true},
		{math.MinInt64, -1, 0, true},
		{math.MinInt64, math.MaxInt64, -1, false},
		{math.MaxInt64, math.MaxInt64, 0, true},
		{math.MinInt64, math.MinInt64, 0, true},
	}
	for _, tt := range tests {
		got, err := Add(tt.a, tt.b)
		if tt.overflow != errors.Is(err, ErrOverflow) || (!tt.overflow && got != tt.want) {
			t.Errorf("Add(%d, %d) = %d, %v", tt.a, tt.b, got, err)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		c     Currency
		minor int64
		want  string
	}{
		{usd, 1999, "19.99"},
		{usd, -5, "-0.05"},
		{usd, 0, "0.00"},
		{usd, 5, "0.05"},
		{usd, 100, "1.00"},
		{usd, -100000, "-1000.00"},
		{jpy, 1500, "1500"},
		{jpy, -1500, "-1500"},
		{jpy, 0, "0"},
		{bhd, 1500, "1.500"},
		{bhd, 1, "0.001"},
		{clf, 12345, "1.2345"},
		{usd, math.MaxInt64, "92233720368547758.07"},
		{usd, math.MinInt64, "-92233720368547758.08"},
	}
	for _, tt := range tests {
		got := tt.c.Format(tt.minor)
		if got != tt.want {
			t.Errorf("%s.Format(%d) = %q, want %q", tt.c.Code, tt.minor, got, tt.want)
		}
		if back, err := ParseAmount(got, tt.c); err != nil || back != tt.minor {
			t.Errorf("ParseAmount(%q, %s) = %d, %v; want %d", got, tt.c.Code, back, err, tt.minor)
		}
	}
}

func TestScale4(t *testing.T) {
	tests := []struct {
		c        Currency
		minor    int64
		want     int64
		overflow bool
	}{
		{usd, 1999, 199900, false},
		{usd, -5, -500, false},
		{jpy, 1500, 15000000, false},
		{bhd, 1500, 15000, false},
		{clf, 12345, 12345, false},
		{usd, 0, 0, false},
		{usd, 9999999999999999, 999999999999999900, false},
		{usd, 10000000000000000, 0, true}, // 10^16 cents = 10^18 unscaled
		{usd, -10000000000000000, 0, true},
		{jpy, 99999999999999, 999999999999990000, false},
		{jpy, 100000000000000, 0, true},
		{jpy, math.MaxInt64, 0, true},
		{jpy, math.MinInt64, 0, true},
		{clf, 999999999999999999, 999999999999999999, false},
		{clf, 1000000000000000000, 0, true},
		{Currency{Code: "XYZ", Digits: 5}, 1, 0, true},
	}
	for _, tt := range tests {
		got, err := tt.c.Scale4(tt.minor)
		if tt.overflow != errors.Is(err, ErrOverflow) || (!tt.overflow && got != tt.want) {
			t.Errorf("%s.Scale4(%d) = %d, %v; want %d (overflow %v)", tt.c.Code, tt.minor, got, err, tt.want, tt.overflow)
		}
	}
}

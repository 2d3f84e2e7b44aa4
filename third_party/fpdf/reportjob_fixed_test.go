package fpdf

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// TestAppendFixed: appendFixed writes strconv's digits for random
// numbers of every magnitude and sign, halfway cases and their
// neighbours, zeros, subnormals, integers, NaN and infinities.
func TestAppendFixed(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	check := func(v float64) {
		for prec := 0; prec <= 6; prec++ {
			want := strconv.AppendFloat(nil, v, 'f', prec, 64)
			if got := appendFixed([]byte("x"), v, prec); string(got[1:]) != string(want) {
				t.Fatalf("appendFixed(%v (%#x), %d) = %s, strconv %s", v, math.Float64bits(v), prec, got[1:], want)
			}
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.005, 0.0005, 0.125, 0.375, 2.675, 1.005,
		1 << 52, 1<<52 - 0.5, 1 << 53, -(1 << 60), math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
		math.Inf(1), math.Inf(-1), math.NaN(), 841.89, 595.28, 0.0049999999, 999.9995} {
		check(v)
		check(-v)
	}
	for i := 0; i < 100000; i++ {
		var v float64
		switch i % 5 {
		case 0: // any bits
			v = math.Float64frombits(rng.Uint64())
		case 1: // page coordinates
			v = (rng.Float64() - 0.2) * 1000
		case 2: // halfway cases: k / 2^n
			v = float64(rng.Intn(1<<20)) / float64(uint64(1)<<uint(rng.Intn(24)))
		case 3: // next to a halfway case
			v = math.Nextafter(float64(rng.Intn(100000))/2000, math.Inf(rng.Intn(2)*2-1))
		case 4: // any magnitude
			v = rng.NormFloat64() * math.Pow(10, float64(rng.Intn(40)-20))
		}
		check(v)
		check(-v)
	}
}

package fpdf

// [reportjob patch] Coordinates formatted with integer arithmetic.
//
// Every coordinate, size and colour fpdf writes is a float64 with 2 or 3
// decimals (%.2f, fmtF64): strconv.AppendFloat(b, v, 'f', prec, 64),
// correctly rounded from v's exact binary value, halfway cases to even.
// appendFixed writes the same digits from v's mantissa and exponent: for
// prec <= 3 and v below 2^52 in magnitude, v * 10^prec is m * 10^prec /
// 2^s exactly (m < 2^53, so m * 1000 < 2^63), whose integer part and
// remainder give the rounded value. Anything else (larger numbers, NaN,
// infinities, more decimals) is strconv's.

import (
	"math"
	"strconv"
)

var pow10u = [4]uint64{1, 10, 100, 1000}

// appendFixed appends strconv.AppendFloat(b, v, 'f', prec, 64).
func appendFixed(b []byte, v float64, prec int) []byte {
	bits := math.Float64bits(v)
	exp := int(bits>>52) & 0x7FF
	if exp == 0x7FF || prec < 0 || prec > 3 {
		return strconv.AppendFloat(b, v, 'f', prec, 64)
	}
	m, e := bits&(1<<52-1), -1074 // subnormal (or zero)
	if exp != 0 {
		m, e = m|1<<52, exp-1075
	}
	if e >= 0 {
		return strconv.AppendFloat(b, v, 'f', prec, 64) // an integer of 2^52 or more
	}
	x, s := m*pow10u[prec], uint(-e)
	var q uint64 // round(v * 10^prec), halfway to even
	if s < 64 {
		q = x >> s
		r, half := x&(1<<s-1), uint64(1)<<(s-1)
		if r > half || r == half && q&1 == 1 {
			q++
		}
	} // else x < 2^63 <= half: 0
	if bits>>63 != 0 {
		b = append(b, '-')
	}
	p := pow10u[prec]
	b = strconv.AppendUint(b, q/p, 10)
	if prec > 0 {
		b = append(b, '.')
		f := q % p
		for d := p / 10; d > 0; d /= 10 {
			b = append(b, byte('0'+f/d%10))
		}
	}
	return b
}

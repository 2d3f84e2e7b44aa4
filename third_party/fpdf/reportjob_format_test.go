package fpdf

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// TestAppendFormat: sprintf and fmtBuffer.printf give fmt.Sprintf's
// string for fpdf's formats and random ones, with random arguments of
// the verbs' types and others (appendFormat declines what it does not
// handle, and fmt writes it).
func TestAppendFormat(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	pieces := []string{"%.2f", "%.3f", "%.5f", "%.4f", "%.4F", "%f", "%.0f", "%.9f", "%s", "%d", "%%", "%x", "%v",
		"%5.2f", "%-d", "%+d", "%.2s", "%.2d", "%.", "%", "%.x", "%.12f", " ", "BT /F", " Tf ET", "(", ")Tj", "re ", "é"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.005, 0.015, 0.125, -0.125, 2.675, 1e21, -1e-7, 841.89,
		123456789.987654321, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	arg := func() interface{} {
		switch rng.Intn(8) {
		case 0, 1, 2:
			if rng.Intn(2) == 0 {
				return floats[rng.Intn(len(floats))]
			}
			return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.Intn(12)))
		case 3, 4:
			return rng.Intn(2000000) - 1000000
		case 5:
			return []string{"", "abc", "é(x)", "%d"}[rng.Intn(4)]
		case 6:
			return int64(rng.Intn(100))
		}
		return float32(rng.Float64())
	}
	var formats []string
	for _, f := range []string{"BT /F%s %.2f Tf ET", "%.2f %.2f m %.2f %.2f l S ", "%.5f %.5f %.5f %.5f %.5f %.5f c",
		"<</Filter /FlateDecode /Length %d>>", "/F%s %d 0 R", "/FontBBox [%d %d %d %d] ", "/CS%d cs %.3f scn",
		"q %s %s Q", "BT %.2f %.2f Td (%s)Tj ET", "%.3f(%s) ", "100%% %d"} {
		formats = append(formats, f)
	}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.Intn(6); n >= 0; n-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		formats = append(formats, b.String())
	}
	for _, format := range formats {
		for try := 0; try < 4; try++ {
			n := strings.Count(format, "%")
			if try == 3 {
				n += rng.Intn(3) - 1 // an argument missing or left over
			}
			var args []interface{}
			for i := 0; i < n; i++ {
				args = append(args, arg())
			}
			want := fmt.Sprintf(format, args...)
			if got := sprintf(format, args...); got != want {
				t.Fatalf("sprintf(%q, %#v) = %q, fmt %q", format, args, got, want)
			}
			var fb fmtBuffer
			fb.WriteString("x")
			fb.printf(format, args...)
			if got := fb.String(); got != "x"+want {
				t.Fatalf("printf(%q, %#v) = %q, fmt %q", format, args, got[1:], want)
			}
		}
	}
}

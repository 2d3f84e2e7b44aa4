package fpdf

// [reportjob patch] sprintf and fmtBuffer.printf without fmt for the
// formats fpdf writes most.
//
// Every operator fpdf writes with outf or a fmtBuffer (a cell's text and
// rectangle, an object's header, the font and page dictionaries) went
// through fmt.Sprintf. appendFormat writes the same bytes for formats
// made of literal text, %%, %s of a string, %d of an int and %f or %.Nf
// (N a digit) of a finite float64, each verb with its own argument and no
// argument left over; any other format or argument (flags, widths, other
// verbs or types, NaN or an infinity) reports false and the caller uses
// fmt.Sprintf, as upstream did. %.Nf of a finite float64 is what
// strconv.AppendFloat(b, v, 'f', N, 64) writes (fmt calls it, then drops
// the sign it adds to a positive number), %f is %.6f, %d of an int is
// strconv.AppendInt.

import (
	"fmt"
	"strconv"
)

// appendFormat appends format with args as fmt.Sprintf would, or reports
// false (b is then to be discarded) for what it does not handle.
func appendFormat(b []byte, format string, args []interface{}) ([]byte, bool) {
	arg := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		i++
		if i >= len(format) {
			return b, false
		}
		if format[i] == '%' {
			b = append(b, '%')
			continue
		}
		prec := -1
		if format[i] == '.' {
			if i+2 >= len(format) || format[i+1] < '0' || format[i+1] > '9' {
				return b, false
			}
			prec = int(format[i+1] - '0')
			i += 2
		}
		if arg >= len(args) {
			return b, false
		}
		switch verb := format[i]; {
		case verb == 'f':
			v, ok := args[arg].(float64)
			if !ok || !finite(v) {
				return b, false
			}
			if prec < 0 {
				prec = 6
			}
			b = appendFixed(b, v, prec) // strconv's digits (reportjob_fixed.go)
		case verb == 's' && prec < 0:
			v, ok := args[arg].(string)
			if !ok {
				return b, false
			}
			b = append(b, v...)
		case verb == 'd' && prec < 0:
			v, ok := args[arg].(int)
			if !ok {
				return b, false
			}
			b = strconv.AppendInt(b, int64(v), 10)
		default:
			return b, false
		}
		arg++
	}
	return b, arg == len(args)
}

// fastSprintf is fmt.Sprintf(format, args...).
func fastSprintf(format string, args []interface{}) string {
	var scratch [256]byte
	if b, ok := appendFormat(scratch[:0], format, args); ok {
		return string(b)
	}
	return fmt.Sprintf(format, args...)
}

package statement

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Statement numbers (docs/statements.md, Statement numbers): PREFIX-YYYYMM-
// NNNNNN, PREFIX being statements.issuer.number_prefix (the job's name by
// default), YYYYMM the statement's month and NNNNNN the agency's sequence
// number in that month, zero-padded to six digits (wider past 999999).
// The month close assigns the sequence numbers and records them in the
// month manifest (monthclose, numbers.go).

// ErrBadNumber is wrapped by the error of a string that is no statement
// number.
var ErrBadNumber = errors.New("not a statement number")

// FormatNumber returns the number of sequence seq (>= 1) of month m
// (YYYY-MM) under prefix.
func FormatNumber(prefix, m string, seq int) string {
	return fmt.Sprintf("%s-%s-%06d", prefix, strings.Replace(m, "-", "", 1), seq)
}

// Number is a statement number taken apart.
type Number struct {
	Prefix string
	Month  string // YYYY-MM
	Seq    int
}

// ParseNumber takes a statement number apart: the sequence after the last
// "-", the month before it, the prefix (which may hold "-") before that.
func ParseNumber(s string) (Number, error) {
	bad := func(why string) (Number, error) {
		return Number{}, fmt.Errorf("%w: %q: %s (want PREFIX-YYYYMM-NNNNNN, e.g. billing-202603-000042)", ErrBadNumber, s, why)
	}
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return bad("no sequence number")
	}
	seqStr := s[i+1:]
	seq, err := strconv.Atoi(seqStr)
	if err != nil || seq < 1 || len(seqStr) < 6 || strings.HasPrefix(seqStr, "+") || (len(seqStr) > 6 && seqStr[0] == '0') {
		return bad("the sequence number must be six digits or more, from 000001")
	}
	rest := s[:i]
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 {
		return bad("no month or no prefix")
	}
	ym := rest[j+1:]
	t, err := time.Parse("200601", ym)
	if err != nil || len(ym) != 6 {
		return bad("the month must be YYYYMM")
	}
	return Number{Prefix: rest[:j], Month: t.Format(MonthLayout), Seq: seq}, nil
}

// String formats n.
func (n Number) String() string { return FormatNumber(n.Prefix, n.Month, n.Seq) }

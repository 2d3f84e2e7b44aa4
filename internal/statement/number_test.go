package statement

import (
	"errors"
	"testing"
)

func TestStatementNumbers(t *testing.T) {
	for _, tc := range []struct {
		prefix, month string
		seq           int
		want          string
	}{
		{"BILL", "2026-03", 42, "BILL-202603-000042"},
		{"billing-report", "2026-12", 1, "billing-report-202612-000001"},
		{"a-b-c", "2027-01", 1234567, "a-b-c-202701-1234567"},
	} {
		got := FormatNumber(tc.prefix, tc.month, tc.seq)
		if got != tc.want {
			t.Errorf("FormatNumber(%q, %q, %d) = %q, want %q", tc.prefix, tc.month, tc.seq, got, tc.want)
		}
		n, err := ParseNumber(got)
		if err != nil || n != (Number{tc.prefix, tc.month, tc.seq}) || n.String() != got {
			t.Errorf("ParseNumber(%q) = %+v, %v", got, n, err)
		}
	}
	for _, bad := range []string{"", "7", "BILL-2026-1", "BILL-202613-000001", "-202603-000001", "BILL-202603-000000",
		"BILL-202603-00001", "BILL-202603-0000001", "BILL-202603-+00001", "BILL202603-000001"} {
		if n, err := ParseNumber(bad); !errors.Is(err, ErrBadNumber) {
			t.Errorf("ParseNumber(%q) = %+v, %v; want ErrBadNumber", bad, n, err)
		}
	}
}

package pricing

import (
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestOf: dated rates split transactions by recorded_at (a rate applies
// from its From on, inclusive); an agency's schedule beats the default
// from its first rate on, the default applies before it; an item's own
// commission_bps wins over both.
func TestOf(t *testing.T) {
	table := Table{
		Default: Schedule{{BPS: 1000}, {BPS: 900, From: day("2026-12-01")}},
		Agencies: map[string]Schedule{
			"acme": {{BPS: 1200}, {BPS: 1100, From: day("2026-12-01")}},
			"late": {{BPS: 500, From: day("2027-01-01").Add(12 * time.Hour)}},
		},
	}
	tests := []struct {
		name       string
		agency     string
		recordedAt time.Time
		own        int32
		hasOwn     bool
		want       int32
	}{
		{"default before its date", "other", day("2026-11-30").Add(24*time.Hour - time.Millisecond), 0, false, 1000},
		{"default from its date", "other", day("2026-12-01"), 0, false, 900},
		{"agency before its date", "acme", day("2026-11-30"), 0, false, 1200},
		{"agency from its date", "acme", day("2026-12-01"), 0, false, 1100},
		{"agency long after", "acme", day("2030-01-01"), 0, false, 1100},
		{"default before an agency's first rate", "late", day("2027-01-01").Add(12*time.Hour - time.Millisecond), 0, false, 900},
		{"agency's first dated rate", "late", day("2027-01-01").Add(12 * time.Hour), 0, false, 500},
		{"own rate wins", "acme", day("2026-12-01"), 1, true, 1},
		{"own rate 0 wins", "other", day("2026-01-01"), 0, true, 0},
	}
	for _, tt := range tests {
		tx := item.Transaction{AgencyID: tt.agency, RecordedAt: tt.recordedAt, BPS: tt.own, HasBPS: tt.hasOwn}
		if got := table.Of(&tx); got != tt.want {
			t.Errorf("%s: Of = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestForPeriod: a period is priced with the table it was billed with,
// unless it has none recorded or a re-pricing is asked for.
func TestForPeriod(t *testing.T) {
	billed, current := Flat(1000), Flat(900)
	for _, tt := range []struct {
		name    string
		billed  *Table
		reprice bool
		want    Table
	}{
		{"first billing", nil, false, current},
		{"rebuild keeps the billed rates", &billed, false, billed},
		{"reprice", &billed, true, current},
	} {
		if got := ForPeriod(tt.billed, current, tt.reprice); !got.Equal(tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if Flat(1).Equal(Table{Default: Schedule{{BPS: 1}}, Agencies: map[string]Schedule{"a": {{BPS: 1}}}}) {
		t.Error("Equal ignores agencies")
	}
}

package report

import (
	"slices"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/keys"
)

// Boundaries: the period an item is billed in, at the first and last
// millisecond of quarters, days, months, the leap day of 2028 and a year;
// and whether a period or a recheck is due exactly at its watermark.

const ms = time.Millisecond

// boundaryInstants are the first millisecond of a quarter, hour, day,
// month, leap day and year, with the millisecond before each.
var boundaryInstants = func() []time.Time {
	var out []time.Time
	for _, s := range []string{
		"2024-03-01T10:15:00Z",                         // a quarter
		"2024-03-01T11:00:00Z",                         // an hour
		"2024-03-02T00:00:00Z",                         // midnight
		"2024-02-01T00:00:00Z", "2024-05-01T00:00:00Z", // month ends (31 and 30 days)
		"2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z", // into and out of the leap day
		"2027-03-01T00:00:00Z", // after 28 February of a common year
		"2029-01-01T00:00:00Z", // year end of a leap year (day 366)
	} {
		t := ts(s)
		out = append(out, t, t.Add(-ms))
	}
	return out
}()

// TestBoundaryBilledPeriod: for every period length and boundary instant,
// the item recorded then is read by exactly one period, the one holding
// the instant: its quarter's partition (plain and sharded) is among that
// period's partitions and among no neighbour's.
func TestBoundaryBilledPeriod(t *testing.T) {
	for _, d := range Periods {
		for _, at := range boundaryInstants {
			p := PeriodAt(at, d)
			midnight := time.Date(p.Start.Year(), p.Start.Month(), p.Start.Day(), 0, 0, 0, 0, time.UTC)
			if p.Start.After(at) || !p.End.After(at) || p.End.Sub(p.Start) != d || p.Start.Sub(midnight)%d != 0 {
				t.Errorf("PeriodAt(%s, %s) = %s", at.Format(time.RFC3339Nano), FormatDuration(d), p)
				continue
			}
			if PeriodAt(p.End.Add(-ms), d) != p || PeriodAt(p.Start, d) != p || PeriodAt(p.End, d).Start != p.End {
				t.Errorf("period %s (%s) does not own exactly [start, end)", p, FormatDuration(d))
			}
			prev, next := PeriodAt(p.Start.Add(-ms), d), PeriodAt(p.End, d)
			for _, shards := range []int{1, 4} {
				pk := keys.Partition(at, keys.Shard("tx-"+at.String(), shards), shards)
				if !slices.Contains(Partitions(p, shards), pk) {
					t.Errorf("%s (%s, %d shards): partition %s not read by its period %s", at.Format(time.RFC3339Nano), FormatDuration(d), shards, pk, p)
				}
				if slices.Contains(Partitions(prev, shards), pk) || slices.Contains(Partitions(next, shards), pk) {
					t.Errorf("%s (%s): partition %s also read by a neighbour of %s", at.Format(time.RFC3339Nano), FormatDuration(d), pk, p)
				}
			}
		}
	}
}

// TestBoundaryNamedPeriods spells out the periods of the calendar's edges.
func TestBoundaryNamedPeriods(t *testing.T) {
	tests := []struct {
		at     string
		d      time.Duration
		name   string // Period.Name
		quarts int    // quarters read
	}{
		{"2028-02-28T23:59:59.999Z", 24 * time.Hour, "20280228T0000Z", 96},
		{"2028-02-29T00:00:00Z", 24 * time.Hour, "20280229T0000Z", 96},
		{"2028-02-29T23:59:59.999Z", 24 * time.Hour, "20280229T0000Z", 96},
		{"2028-03-01T00:00:00Z", 24 * time.Hour, "20280301T0000Z", 96},
		{"2027-02-28T23:59:59.999Z", 24 * time.Hour, "20270228T0000Z", 96},
		{"2027-03-01T00:00:00Z", 12 * time.Hour, "20270301T0000Z", 48},
		{"2028-02-29T23:59:59.999Z", 8 * time.Hour, "20280229T1600Z", 32},
		{"2028-02-29T15:59:59.999Z", 8 * time.Hour, "20280229T0800Z", 32},
		{"2028-02-29T23:59:59.999Z", 3 * time.Hour, "20280229T2100Z", 12},
		{"2024-01-31T23:59:59.999Z", 15 * time.Minute, "20240131T2345Z", 1},
		{"2024-02-01T00:00:00Z", 15 * time.Minute, "20240201T0000Z", 1},
		{"2024-03-01T10:14:59.999Z", 15 * time.Minute, "20240301T1000Z", 1},
		{"2024-03-01T10:15:00Z", 30 * time.Minute, "20240301T1000Z", 2},
		{"2028-12-31T23:59:59.999Z", time.Hour, "20281231T2300Z", 4},
		{"2029-01-01T00:00:00Z", 2 * time.Hour, "20290101T0000Z", 8},
	}
	for _, tt := range tests {
		p := PeriodAt(ts(tt.at), tt.d)
		if p.Name() != tt.name || len(p.Quarters()) != tt.quarts || len(Partitions(p, 1)) != tt.quarts {
			t.Errorf("PeriodAt(%s, %s) = %s (%d quarters), want %s (%d)", tt.at, FormatDuration(tt.d), p.Name(), len(p.Quarters()), tt.name, tt.quarts)
		}
	}
}

// TestBoundaryDueAtWatermark: a period is due from the millisecond its end
// plus the lateness is reached, not one millisecond earlier, across the
// leap day, midnight and a year end.
func TestBoundaryDueAtWatermark(t *testing.T) {
	tests := []struct {
		checkpoint string
		d, late    time.Duration
		end        string // end of the one period due at end+late
	}{
		{"2028-02-29T00:00:00Z", 24 * time.Hour, 2 * time.Minute, "2028-03-01T00:00:00Z"},
		{"2028-02-28T00:00:00Z", 24 * time.Hour, 0, "2028-02-29T00:00:00Z"},
		{"2028-02-28T23:45:00Z", 15 * time.Minute, 0, "2028-02-29T00:00:00Z"},
		{"2028-12-31T23:00:00Z", time.Hour, 23*time.Hour + 59*time.Minute, "2029-01-01T00:00:00Z"},
		{"2024-01-31T12:00:00Z", 12 * time.Hour, 90 * time.Second, "2024-02-01T00:00:00Z"},
	}
	for _, tt := range tests {
		cp, end := ts(tt.checkpoint), ts(tt.end)
		watermark := end.Add(tt.late)
		due, _, err := Due(cp, time.Time{}, watermark.Add(-ms), tt.d, tt.late, 10)
		if err != nil || len(due) != 0 {
			t.Errorf("checkpoint %s, now %s (1 ms before the watermark): due %s, %v", tt.checkpoint, watermark.Add(-ms).Format(time.RFC3339Nano), names(due), err)
		}
		due, _, err = Due(cp, time.Time{}, watermark, tt.d, tt.late, 10)
		if err != nil || len(due) != 1 || !due[0].Start.Equal(cp) || !due[0].End.Equal(end) {
			t.Errorf("checkpoint %s, now %s (the watermark): due %s, %v; want the period ending %s", tt.checkpoint, watermark.Format(time.RFC3339), names(due), err, tt.end)
		}
		// With report.start instead of a checkpoint: the same.
		due, _, _ = Due(time.Time{}, cp, watermark, tt.d, tt.late, 10)
		if len(due) != 1 || !due[0].End.Equal(end) {
			t.Errorf("start %s, now %s: due %s", tt.checkpoint, watermark.Format(time.RFC3339), names(due))
		}
	}
}

// TestBoundaryRecheckAtWatermark: a recheck is due from end+delay exactly,
// and a read exactly at end+delay counts as that recheck.
func TestBoundaryRecheckAtWatermark(t *testing.T) {
	end := ts("2028-03-01T00:00:00Z") // the leap day's 24h period
	delays := []time.Duration{time.Hour, 24 * time.Hour}
	e := checkpoint.Recheck{Start: end.Add(-24 * time.Hour), End: end, Read: end.Add(2 * time.Minute)}
	if RecheckDue(e, delays, end.Add(time.Hour-ms)) || !RecheckDue(e, delays, end.Add(time.Hour)) {
		t.Errorf("recheck at end+1h: due at -1ms %v, at 0 %v; want false, true",
			RecheckDue(e, delays, end.Add(time.Hour-ms)), RecheckDue(e, delays, end.Add(time.Hour)))
	}
	e.Read = end.Add(time.Hour) // the 1h recheck read exactly at its time
	if RecheckDue(e, delays, end.Add(24*time.Hour-ms)) || !RecheckDue(e, delays, end.Add(24*time.Hour)) ||
		!NextRecheck(e, delays).Equal(end.Add(24*time.Hour)) {
		t.Errorf("after the 1h recheck: next %v", NextRecheck(e, delays))
	}
	if !RecheckOwed(end, end.Add(24*time.Hour-ms), delays) || RecheckOwed(end, end.Add(24*time.Hour), delays) {
		t.Error("a read 1 ms before end+24h still owes the 24h recheck; one at end+24h does not")
	}
}

package report

import (
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

func TestRechecks(t *testing.T) {
	h := time.Hour
	end := ts("2024-03-01T11:00:00Z")
	entry := func(read string) checkpoint.Recheck {
		return checkpoint.Recheck{Start: end.Add(-h), End: end, Read: ts(read)}
	}
	tests := []struct {
		name    string
		read    string
		delays  []time.Duration
		now     string
		owed    bool
		due     bool
		nextDue string // "" none
	}{
		{"delivered on time, before the 1h recheck", "2024-03-01T11:02:00Z", []time.Duration{h}, "2024-03-01T11:59:59Z", true, false, "2024-03-01T12:00:00Z"},
		{"exactly at end+1h", "2024-03-01T11:02:00Z", []time.Duration{h}, "2024-03-01T12:00:00Z", true, true, "2024-03-01T12:00:00Z"},
		{"long after: still due once", "2024-03-01T11:02:00Z", []time.Duration{h}, "2024-03-05T00:00:00Z", true, true, "2024-03-01T12:00:00Z"},
		{"delivery itself was after end+1h (outage)", "2024-03-01T13:00:00Z", []time.Duration{h}, "2024-03-01T14:00:00Z", false, false, ""},
		{"delivery read exactly at end+1h counts", "2024-03-01T12:00:00Z", []time.Duration{h}, "2024-03-01T12:00:00Z", false, false, ""},
		{"two delays: first done, second pending", "2024-03-01T12:05:00Z", []time.Duration{h, 24 * h}, "2024-03-01T13:00:00Z", true, false, "2024-03-02T11:00:00Z"},
		{"two delays: second due", "2024-03-01T12:05:00Z", []time.Duration{h, 24 * h}, "2024-03-02T11:00:00Z", true, true, "2024-03-02T11:00:00Z"},
		{"two delays, both missed: one recheck covers both", "2024-03-01T11:02:00Z", []time.Duration{h, 24 * h}, "2024-03-03T00:00:00Z", true, true, "2024-03-01T12:00:00Z"},
		{"no delays", "2024-03-01T11:02:00Z", nil, "2024-03-03T00:00:00Z", false, false, ""},
	}
	for _, tt := range tests {
		e := entry(tt.read)
		if got := RecheckOwed(e.End, e.Read, tt.delays); got != tt.owed {
			t.Errorf("%s: RecheckOwed = %v, want %v", tt.name, got, tt.owed)
		}
		if got := RecheckDue(e, tt.delays, ts(tt.now)); got != tt.due {
			t.Errorf("%s: RecheckDue = %v, want %v", tt.name, got, tt.due)
		}
		var want time.Time
		if tt.nextDue != "" {
			want = ts(tt.nextDue)
		}
		if got := NextRecheck(e, tt.delays); !got.Equal(want) {
			t.Errorf("%s: NextRecheck = %v, want %v", tt.name, got, want)
		}
	}
}

// TestRechecksDueBound: after an outage, a run rechecks at most max
// periods, oldest first, and counts the rest.
func TestRechecksDueBound(t *testing.T) {
	h := time.Hour
	var entries []checkpoint.Recheck
	start := ts("2024-03-01T00:00:00Z")
	for i := range 48 {
		s := start.Add(time.Duration(i) * h)
		entries = append(entries, checkpoint.Recheck{Start: s, End: s.Add(h), Read: s.Add(h + 2*time.Minute)})
	}
	now := ts("2024-03-02T12:30:00Z") // periods ending up to 11:30 are due (end+1h <= now)
	due, remaining := RechecksDue(entries, []time.Duration{h}, now, 10)
	if len(due) != 10 || !due[0].Start.Equal(start) || !due[9].Start.Equal(start.Add(9*h)) {
		t.Fatalf("due = %d entries from %v", len(due), due)
	}
	// Periods 00:00..10:00 of day 2 end by 11:00 (+1h <= 12:30): 24+11 = 35 due.
	if remaining != 35-10 {
		t.Errorf("remaining = %d, want 25", remaining)
	}
	due, remaining = RechecksDue(entries, []time.Duration{h}, start, 10)
	if len(due) != 0 || remaining != 0 {
		t.Errorf("before any end+1h: due %d, remaining %d", len(due), remaining)
	}
}

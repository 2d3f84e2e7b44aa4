package report

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// names renders periods as "DDTHH:MM-HH:MM" (start day, start and end times).
func names(ps []Period) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Start.UTC().Format("02T15:04") + "-" + p.End.UTC().Format("15:04"))
	}
	return b.String()
}

func TestDue(t *testing.T) {
	day := "2024-03-01T"
	tests := []struct {
		name          string
		checkpoint    string // "" none
		start         string // "" none
		now           string
		period        time.Duration
		lateness      time.Duration
		max           int
		want          string
		wantRemaining int
		wantErr       error
	}{
		{name: "no checkpoint, no start", now: day + "05:00:00Z", period: time.Hour, max: 10, wantErr: ErrNoStart},
		{name: "first run from start", start: day + "00:00:00Z", now: day + "03:02:00Z", period: time.Hour,
			lateness: 2 * time.Minute, max: 10, want: "01T00:00-01:00 01T01:00-02:00 01T02:00-03:00"},
		{name: "checkpoint wins over start", checkpoint: day + "02:00:00Z", start: day + "00:00:00Z", now: day + "03:02:00Z",
			period: time.Hour, lateness: 2 * time.Minute, max: 10, want: "01T02:00-03:00"},
		{name: "one second before end+lateness: not due", checkpoint: day + "02:00:00Z", now: day + "03:01:59Z",
			period: time.Hour, lateness: 2 * time.Minute, max: 10, want: ""},
		{name: "exactly end+lateness: due", checkpoint: day + "02:00:00Z", now: day + "03:02:00Z",
			period: time.Hour, lateness: 2 * time.Minute, max: 10, want: "01T02:00-03:00"},
		{name: "checkpoint at now: nothing", checkpoint: day + "03:00:00Z", now: day + "03:00:00Z",
			period: 15 * time.Minute, max: 10, want: ""},
		{name: "catch-up after a day of downtime is capped, the rest counted",
			checkpoint: day + "00:00:00Z", now: "2024-03-02T00:02:00Z", period: time.Hour, lateness: 2 * time.Minute, max: 5,
			want: "01T00:00-01:00 01T01:00-02:00 01T02:00-03:00 01T03:00-04:00 01T04:00-05:00", wantRemaining: 19},
		{name: "cap of one", checkpoint: day + "00:00:00Z", now: day + "04:00:00Z", period: time.Hour, max: 1,
			want: "01T00:00-01:00", wantRemaining: 3},
		{name: "count only (status): max 0", checkpoint: day + "00:00:00Z", now: day + "04:30:00Z", period: time.Hour, max: 0,
			want: "", wantRemaining: 4},
		{name: "a partly elapsed period is not counted", checkpoint: day + "00:00:00Z", now: day + "02:59:59Z",
			period: time.Hour, max: 1, want: "01T00:00-01:00", wantRemaining: 1},
		// The period was 15m, then changed to 1h: the checkpoint is not an
		// hour boundary. The first period is shortened to the next boundary
		// so that no quarter is skipped or billed twice.
		{name: "misaligned checkpoint after a period change", checkpoint: day + "00:15:00Z", now: day + "03:00:00Z",
			period: time.Hour, max: 10, want: "01T00:15-01:00 01T01:00-02:00 01T02:00-03:00"},
		{name: "misaligned checkpoint, capped", checkpoint: day + "00:15:00Z", now: day + "05:00:00Z",
			period: time.Hour, max: 1, want: "01T00:15-01:00", wantRemaining: 4},
		{name: "misaligned checkpoint, count only", checkpoint: day + "00:15:00Z", now: day + "05:00:00Z",
			period: time.Hour, max: 0, want: "", wantRemaining: 5},
		{name: "misaligned checkpoint, short period not yet due", checkpoint: day + "00:45:00Z", now: day + "00:59:00Z",
			period: time.Hour, max: 10, want: ""},
		{name: "24h periods across days", checkpoint: day + "00:00:00Z", now: "2024-03-03T00:05:00Z",
			period: 24 * time.Hour, lateness: 5 * time.Minute, max: 10,
			want: "01T00:00-00:00 02T00:00-00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cp, start time.Time
			if tt.checkpoint != "" {
				cp = ts(tt.checkpoint)
			}
			if tt.start != "" {
				start = ts(tt.start)
			}
			due, remaining, err := Due(cp, start, ts(tt.now), tt.period, tt.lateness, tt.max)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := names(due); got != tt.want {
				t.Errorf("due = %q, want %q", got, tt.want)
			}
			if remaining != tt.wantRemaining {
				t.Errorf("remaining = %d, want %d", remaining, tt.wantRemaining)
			}
			// Due periods are contiguous from the checkpoint, and each one
			// is complete at now.
			from := cp
			if from.IsZero() {
				from = start
			}
			for _, p := range due {
				if !p.Start.Equal(from) {
					t.Errorf("period %s does not start where the previous one ended (%s)", p, from)
				}
				if !Aligned(p.End, tt.period) {
					t.Errorf("period %s ends off a boundary", p)
				}
				if ts(tt.now).Before(p.End.Add(tt.lateness)) {
					t.Errorf("period %s is not due at %s", p, tt.now)
				}
				from = p.End
			}
		})
	}
}

// TestDueRemainingMatchesDrain checks the count Due reports against the
// periods later runs actually get, for aligned and misaligned checkpoints.
func TestDueRemainingMatchesDrain(t *testing.T) {
	for _, cp := range []string{"2024-03-01T00:00:00Z", "2024-03-01T00:15:00Z", "2024-03-01T00:45:00Z"} {
		for _, max := range []int{0, 1, 3, 7} {
			now := ts("2024-03-01T09:10:00Z")
			due, remaining, err := Due(ts(cp), time.Time{}, now, time.Hour, 0, max)
			if err != nil {
				t.Fatal(err)
			}
			all, _, err := Due(ts(cp), time.Time{}, now, time.Hour, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(due)+remaining != len(all) {
				t.Errorf("checkpoint %s max %d: %d due + %d remaining, want %d in all", cp, max, len(due), remaining, len(all))
			}
		}
	}
}

func TestRange(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		period   time.Duration
		want     string
		wantErr  string
	}{
		{name: "three hours", from: "2024-03-01T01:00:00Z", to: "2024-03-01T04:00:00Z", period: time.Hour,
			want: "01T01:00-02:00 01T02:00-03:00 01T03:00-04:00"},
		{name: "one period", from: "2024-03-01T06:00:00Z", to: "2024-03-01T12:00:00Z", period: 6 * time.Hour,
			want: "01T06:00-12:00"},
		{name: "quarters", from: "2024-03-01T23:30:00Z", to: "2024-03-02T00:15:00Z", period: 15 * time.Minute,
			want: "01T23:30-23:45 01T23:45-00:00 02T00:00-00:15"},
		{name: "days", from: "2024-03-01T00:00:00Z", to: "2024-03-03T00:00:00Z", period: 24 * time.Hour,
			want: "01T00:00-00:00 02T00:00-00:00"},
		{name: "from off a boundary", from: "2024-03-01T01:30:00Z", to: "2024-03-01T04:00:00Z", period: time.Hour,
			wantErr: "--from 2024-03-01T01:30:00Z is not a period boundary"},
		{name: "to off a boundary", from: "2024-03-01T01:00:00Z", to: "2024-03-01T04:00:01Z", period: time.Hour,
			wantErr: "--to 2024-03-01T04:00:01Z is not a period boundary"},
		{name: "8h periods start at midnight", from: "2024-03-01T04:00:00Z", to: "2024-03-01T16:00:00Z", period: 8 * time.Hour,
			wantErr: "--from 2024-03-01T04:00:00Z is not a period boundary (period 8h, aligned to UTC midnight)"},
		{name: "empty range", from: "2024-03-01T04:00:00Z", to: "2024-03-01T04:00:00Z", period: time.Hour,
			wantErr: "must be after --from"},
		{name: "reversed", from: "2024-03-01T05:00:00Z", to: "2024-03-01T04:00:00Z", period: time.Hour,
			wantErr: "must be after --from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := Range(ts(tt.from), ts(tt.to), tt.period)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(ps); got != tt.want {
				t.Errorf("Range = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPeriodAtAndAligned(t *testing.T) {
	for _, d := range Periods {
		if (24*time.Hour)%d != 0 {
			t.Errorf("period %s does not divide a day", d)
		}
		at := ts("2024-03-01T13:37:42Z")
		p := PeriodAt(at, d)
		if p.Start.After(at) || !p.End.After(at) || p.End.Sub(p.Start) != d {
			t.Errorf("PeriodAt(%s, %s) = %s", at, d, p)
		}
		if !Aligned(p.Start, d) || !Aligned(p.End, d) || Aligned(p.Start.Add(time.Minute), d) {
			t.Errorf("Aligned wrong around %s for %s", p, d)
		}
		if got := len(p.Quarters()); got != int(d/Quarter) {
			t.Errorf("%s has %d quarters, want %d", p, got, d/Quarter)
		}
	}
	// Not UTC in, UTC out.
	paris := time.FixedZone("CET", 3600)
	p := PeriodAt(time.Date(2024, 3, 1, 0, 30, 0, 0, paris), time.Hour)
	if want := ts("2024-02-29T23:00:00Z"); !p.Start.Equal(want) || p.Start.Location() != time.UTC {
		t.Errorf("PeriodAt in CET = %s, want %s in UTC", p, want)
	}
}

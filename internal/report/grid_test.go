package report

import (
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

func TestGridSwitchesAtASharedBoundary(t *testing.T) {
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	h := func(x float64) time.Time { return day.Add(time.Duration(x * float64(time.Hour))) }
	tests := []struct {
		name       string
		epochs     []checkpoint.Epoch
		checkpoint time.Time
		period     time.Duration
		wantSwitch time.Time
		// wantDue are the starts and lengths of the periods due at h(12).
		wantDue string
	}{
		{"1h -> 15m switches at the checkpoint", []checkpoint.Epoch{{From: h(0), Period: time.Hour}}, h(10), 15 * time.Minute,
			h(10), "1000+15m 1015+15m 1030+15m 1045+15m 1100+15m 1115+15m 1130+15m 1145+15m"},
		{"15m -> 1h waits for the hour", []checkpoint.Epoch{{From: h(0), Period: 15 * time.Minute}}, h(10.25), time.Hour,
			h(11), "1015+15m 1030+15m 1045+15m 1100+1h"},
		{"2h -> 3h waits for 6h", []checkpoint.Epoch{{From: h(0), Period: 2 * time.Hour}}, h(2), 3 * time.Hour,
			h(6), "0200+2h 0400+2h 0600+3h 0900+3h"},
		{"3h -> 2h waits for 6h", []checkpoint.Epoch{{From: h(0), Period: 3 * time.Hour}}, h(3), 2 * time.Hour,
			h(6), "0300+3h 0600+2h 0800+2h 1000+2h"},
		{"same period", []checkpoint.Epoch{{From: h(0), Period: time.Hour}}, h(10), time.Hour,
			h(0), "1000+1h 1100+1h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := Grid{Epochs: tc.epochs, Checkpoint: tc.checkpoint, Period: tc.period, Start: h(-48)}
			if got := g.Switch(); !got.Equal(tc.wantSwitch) {
				t.Errorf("Switch = %v, want %v", got, tc.wantSwitch)
			}
			due, rem, err := g.Due(h(12), 0, 100)
			if err != nil || rem != 0 {
				t.Fatalf("Due: %v, remaining %d", err, rem)
			}
			var got []string
			for _, p := range due {
				got = append(got, p.Start.Format("1504")+"+"+FormatDuration(p.End.Sub(p.Start)))
			}
			if strings.Join(got, " ") != tc.wantDue {
				t.Errorf("Due = %s\nwant  %s", strings.Join(got, " "), tc.wantDue)
			}
			// Delivered periods keep their grid; nothing before the first.
			all := g.Between(h(-48), h(12))
			if len(all) == 0 || !all[0].Start.Equal(h(0)) {
				t.Fatalf("Between starts at %v, want the first epoch %v", all, h(0))
			}
			for i, p := range all {
				if i > 0 && !p.Start.Equal(all[i-1].End) {
					t.Fatalf("Between: gap or overlap at %s after %s", p, all[i-1])
				}
				if p.Start.Before(tc.checkpoint) && p.End.Sub(p.Start) != tc.epochs[0].Period {
					t.Fatalf("delivered period %s changed its grid", p)
				}
			}
			// Delivering the due periods records the new epoch once, at the switch.
			for _, p := range due {
				if es, changed := g.Delivered(p); changed {
					if !p.Start.Equal(tc.wantSwitch) || len(es) != 2 || es[1].Period != tc.period {
						t.Fatalf("Delivered(%s) records %v", p, es)
					}
					g.Epochs = es
				}
				g.Checkpoint = p.End
			}
		})
	}
}

func TestGridNothingBeforeTheFirstPeriod(t *testing.T) {
	start := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	g := Grid{Start: start, Period: time.Hour}
	if ps, err := g.Range(start.Add(-72*time.Hour), start.Add(2*time.Hour)); err != nil || len(ps) != 2 || !ps[0].Start.Equal(start) {
		t.Fatalf("Range over report.start = %v, %v; want the two periods from report.start", ps, err)
	}
	if ps, err := g.Range(start.Add(-72*time.Hour), start); err != nil || len(ps) != 0 {
		t.Fatalf("Range before report.start = %v, %v; want none", ps, err)
	}
	g = Grid{Epochs: []checkpoint.Epoch{{From: start, Period: time.Hour}}, Checkpoint: start.Add(5 * time.Hour), Start: start.Add(-24 * time.Hour), Period: time.Hour}
	if ps := g.Between(start.Add(-24*time.Hour), start.Add(time.Hour)); len(ps) != 1 {
		t.Fatalf("an earlier report.start on a running job: Between = %v, want only the first delivered period", ps)
	}
	if _, err := g.Range(start.Add(30*time.Minute), start.Add(2*time.Hour)); err == nil {
		t.Fatal("Range from inside a period: no error")
	}
}

// TestGridKeepsAPeriodPublishedAfterTheCheckpoint: a period already
// published after the checkpoint (a run stopped between its manifest and
// its checkpoint, a backfill of an earlier version) keeps the grid it was
// published with, whatever report.period says now (issue 31).
func TestGridKeepsAPeriodPublishedAfterTheCheckpoint(t *testing.T) {
	day := time.Date(2026, 1, 7, 0, 0, 0, 0, time.UTC)
	d := func(x float64) time.Time { return day.Add(time.Duration(x * float64(24*time.Hour))) }
	daily := []checkpoint.Epoch{{From: d(0), Period: 24 * time.Hour}}
	tests := []struct {
		name       string
		epochs     []checkpoint.Epoch
		checkpoint time.Time
		published  Period
		period     time.Duration
		wantSwitch time.Time
		// wantDue are the starts and lengths of the periods due at d(3).
		wantDue string
	}{
		{"24h published, now 1h: the switch waits for its end", daily, d(2), Period{d(2), d(3)}, time.Hour,
			d(3), "0109T0000+24h"},
		{"1h published at the switch, still 1h: as without it", daily, d(2), Period{Start: d(2)}.plus(time.Hour), time.Hour,
			d(2), "0109T0000+1h 0109T0100+1h"},
		{"1h published at the switch, back to 24h: 1h until both share a boundary", daily, d(2), Period{Start: d(2)}.plus(time.Hour), 24 * time.Hour,
			d(3), "0109T0000+1h 0109T0100+1h"},
		{"nothing delivered, 24h published, now 1h", nil, time.Time{}, Period{d(0), d(1)}, time.Hour,
			d(1), "0107T0000+24h 0108T0000+1h"},
		{"published before the checkpoint: no effect", daily, d(2), Period{d(1), d(2)}, time.Hour,
			d(2), "0109T0000+1h 0109T0100+1h"},
		{"none published", daily, d(2), Period{}, time.Hour,
			d(2), "0109T0000+1h 0109T0100+1h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := Grid{Epochs: tc.epochs, Checkpoint: tc.checkpoint, Start: d(0), Period: tc.period, Published: tc.published}
			if got := g.Switch(); !got.Equal(tc.wantSwitch) {
				t.Errorf("Switch = %v, want %v", got, tc.wantSwitch)
			}
			if p := tc.published; !p.End.IsZero() && !p.Start.Before(tc.checkpoint) {
				if got, ok := g.At(p.Start); !ok || got != p {
					t.Errorf("At(%v) = %v, want the published period %v", p.Start, got, p)
				}
			}
			due, _, err := g.Due(d(3).Add(time.Minute), 0, 2)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range due {
				got = append(got, p.Start.Format("0102T1504")+"+"+FormatDuration(p.End.Sub(p.Start)))
			}
			if strings.Join(got, " ") != tc.wantDue {
				t.Errorf("Due = %s\nwant  %s", strings.Join(got, " "), tc.wantDue)
			}
		})
	}
}

func (p Period) plus(d time.Duration) Period { return Period{Start: p.Start, End: p.Start.Add(d)} }

package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Grid says which periods a job has. It is the one place that answers
// it: delivery, rechecks, backfill and verify all take their periods
// from it (SPEC section 6):
//
//   - The periods already delivered keep the grid they were delivered
//     with (Epochs, recorded in the job's state with the checkpoint).
//   - After the checkpoint, the grid of the last epoch goes on until the
//     first boundary at or after the checkpoint that it shares with the
//     configured period (Switch); from there, periods are Period long.
//   - No period starts before the first delivered period (Epochs[0].From)
//     or, when none was delivered yet, before Start (report.start). Once
//     a period is delivered, report.start no longer matters.
type Grid struct {
	// Epochs are the recorded grid of the delivered periods, ascending.
	Epochs []checkpoint.Epoch
	// Checkpoint is the end of the last delivered period (zero: none).
	Checkpoint time.Time
	// Start is report.start, the first period when none was delivered.
	Start time.Time
	// Period is the configured report.period.
	Period time.Duration
}

// NewGrid returns the grid of a job whose state is st (with its grid
// recorded or inferred) and whose configured period and start are d and
// start.
func NewGrid(st checkpoint.State, start time.Time, d time.Duration) Grid {
	return Grid{Epochs: st.Grid, Checkpoint: st.Checkpoint, Start: start, Period: d}
}

// First returns the start of the job's first period, or ErrNoStart.
func (g Grid) First() (time.Time, error) {
	switch {
	case len(g.Epochs) > 0:
		return g.Epochs[0].From.UTC(), nil
	case !g.Start.IsZero():
		return g.Start.UTC(), nil
	}
	return time.Time{}, ErrNoStart
}

// Switch returns when the configured period takes over: the first
// boundary at or after the checkpoint that the last epoch's period and
// the configured one share (the last epoch's start when they are the
// same; the first period when nothing was delivered).
func (g Grid) Switch() time.Time {
	if len(g.Epochs) == 0 {
		t, _ := g.First()
		return t
	}
	last := g.Epochs[len(g.Epochs)-1]
	if last.Period == g.Period {
		return last.From.UTC()
	}
	from := g.Checkpoint
	if from.Before(last.From) {
		from = last.From
	}
	l := lcm(last.Period, g.Period)
	t := PeriodAt(from, l).Start
	if t.Before(from) {
		t = t.Add(l)
	}
	return t
}

func lcm(a, b time.Duration) time.Duration {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// epochs returns the recorded epochs and, when the configured period
// differs from the last one, the epoch it starts at the switch.
func (g Grid) epochs() []checkpoint.Epoch {
	if len(g.Epochs) == 0 {
		first, err := g.First()
		switch {
		case err != nil && g.Checkpoint.IsZero():
			return nil
		case err != nil || first.After(g.Checkpoint) && !g.Checkpoint.IsZero():
			// A state whose grid is not known (status does not infer
			// it): the configured grid from the checkpoint.
			first = g.Checkpoint
		}
		return []checkpoint.Epoch{{From: first.UTC(), Period: g.Period}}
	}
	es := g.Epochs
	if last := es[len(es)-1]; last.Period != g.Period {
		es = append(slices.Clip(es), checkpoint.Epoch{From: g.Switch(), Period: g.Period})
	}
	return es
}

// At returns the period that contains t; false when t is before the
// first period.
func (g Grid) At(t time.Time) (Period, bool) {
	return periodIn(g.epochs(), t)
}

func periodIn(es []checkpoint.Epoch, t time.Time) (Period, bool) {
	i := -1
	for k, e := range es {
		if !e.From.After(t) {
			i = k
		}
	}
	if i < 0 {
		return Period{}, false
	}
	p := PeriodAt(t, es[i].Period)
	if p.Start.Before(es[i].From) {
		p.Start = es[i].From.UTC() // a period shortened at a switch (states of earlier versions)
	}
	if i+1 < len(es) && p.End.After(es[i+1].From) {
		p.End = es[i+1].From.UTC()
	}
	return p, true
}

// Next returns the period that starts at the end of p.
func (g Grid) Next(p Period) Period {
	n, _ := g.At(p.End)
	return n
}

// Between returns the periods that start in [from, to), oldest first.
func (g Grid) Between(from, to time.Time) []Period {
	es := g.epochs()
	if len(es) == 0 {
		return nil
	}
	if from.Before(es[0].From) {
		from = es[0].From
	}
	p, _ := periodIn(es, from)
	if p.Start.Before(from) {
		p, _ = periodIn(es, p.End)
	}
	var ps []Period
	for ; p.Start.Before(to); p, _ = periodIn(es, p.End) {
		ps = append(ps, p)
	}
	return ps
}

// Range returns the periods in [from, to) for --from and --to, which must
// be period boundaries of the grid (a time before the first period
// counts as one), oldest first. Periods before the first one do not
// exist: a range before it is empty.
func (g Grid) Range(from, to time.Time) ([]Period, error) {
	for _, b := range []struct {
		flag string
		t    time.Time
	}{{"--from", from}, {"--to", to}} {
		if p, ok := g.At(b.t); ok && !p.Start.Equal(b.t.UTC()) {
			return nil, fmt.Errorf("%s %s is not a period boundary (periods of %s there, %s, aligned to UTC midnight)",
				b.flag, b.t.UTC().Format(time.RFC3339), FormatDuration(p.End.Sub(p.Start)), p)
		}
	}
	if !to.After(from) {
		return nil, fmt.Errorf("--to %s must be after --from %s", to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	return g.Between(from, to), nil
}

// Due returns the periods due at now, oldest first, after the checkpoint
// (or from the first period when there is none), at most max of them,
// and how many more are due beyond those. A period is due when
// now >= end+lateness.
func (g Grid) Due(now time.Time, lateness time.Duration, max int) (due []Period, remaining int, err error) {
	from := g.Checkpoint
	if from.IsZero() {
		if from, err = g.First(); err != nil {
			return nil, 0, err
		}
	}
	es := g.epochs()
	sw := es[len(es)-1].From
	watermark := now.Add(-lateness)
	p, _ := periodIn(es, from)
	p.Start = from.UTC() // the checkpoint is where the next period starts
	for ; !p.End.After(watermark); p, _ = periodIn(es, p.End) {
		if len(due) < max {
			due = append(due, p)
			continue
		}
		if !p.Start.Before(sw) {
			// Past the switch every period is g.Period long and aligned:
			// count the rest without building them.
			remaining += 1 + int(watermark.Sub(p.End)/g.Period)
			break
		}
		remaining++
	}
	return due, remaining, nil
}

// Delivered returns the grid to record with the checkpoint move that
// delivers p, and whether it differs from the recorded one (the first
// period, or the first of a new epoch).
func (g Grid) Delivered(p Period) ([]checkpoint.Epoch, bool) {
	es := g.epochs()
	n := 0
	for _, e := range es {
		if !e.From.After(p.Start) {
			n++
		}
	}
	if n <= len(g.Epochs) {
		return g.Epochs, false
	}
	return slices.Clone(es[:n]), true
}

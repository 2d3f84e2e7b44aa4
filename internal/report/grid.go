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
//     A period already published after the checkpoint (Published) keeps
//     the grid it was published with: the switch waits for its end.
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
	// Published is the last period after the checkpoint that has a
	// manifest (zero: none, as normally): a run stopped between a
	// period's manifest and its checkpoint, or a backfill of an earlier
	// version published it. The grid keeps it as it was published, so
	// that no published period ever makes a report.period change fail
	// (SPEC section 7); the next run delivers it again and moves the
	// checkpoint over it.
	Published Period
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
// boundary that the grid in force after the checkpoint and the configured
// period share, at or after the checkpoint and after the end of the
// Published period (the last epoch's start when the periods are the same;
// the first period when nothing was delivered).
func (g Grid) Switch() time.Time {
	es := g.epochs()
	if len(es) == 0 {
		t, _ := g.First()
		return t
	}
	return es[len(es)-1].From
}

// boundary returns the first boundary at or after t that periods of a and
// b share.
func boundary(t time.Time, a, b time.Duration) time.Time {
	l := lcm(a, b)
	s := PeriodAt(t, l).Start
	if s.Before(t) {
		s = s.Add(l)
	}
	return s
}

func lcm(a, b time.Duration) time.Duration {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// epochs returns the recorded epochs, then those after the checkpoint
// (after).
func (g Grid) epochs() []checkpoint.Epoch {
	es := g.Epochs
	if len(es) == 0 {
		first, err := g.First()
		switch {
		case err != nil && g.Checkpoint.IsZero():
			return nil
		case err != nil || first.After(g.Checkpoint) && !g.Checkpoint.IsZero():
			// A state whose grid is not known (status does not infer
			// it): the configured grid from the checkpoint.
			return []checkpoint.Epoch{{From: g.Checkpoint.UTC(), Period: g.Period}}
		}
		// Nothing delivered yet: the first period's grid is the
		// configured one, or that of a period already published from it.
		d := g.Period
		if pub := g.Published; pub.Start.Equal(first) && Aligned(first, pub.End.Sub(pub.Start)) {
			d = pub.End.Sub(pub.Start)
		}
		es = []checkpoint.Epoch{{From: first.UTC(), Period: d}}
	}
	if after := g.after(es[len(es)-1]); len(after) > 0 {
		es = append(slices.Clip(es), after...)
	}
	return es
}

// after returns the epochs that follow the last one (last) after the
// checkpoint. With no Published period, the configured period starts at
// the first boundary at or after the checkpoint that both grids share.
// A Published period keeps its grid: on last's grid, the switch waits
// for its end; on another grid (a run that switched and stopped before
// its checkpoint moved), that grid starts where it would have, and the
// configured one after the Published period.
func (g Grid) after(last checkpoint.Epoch) []checkpoint.Epoch {
	from := g.Checkpoint
	if from.Before(last.From) {
		from = last.From
	}
	cur := last.Period
	var out []checkpoint.Epoch
	if pub := g.Published; pub.End.After(from) {
		if d := pub.End.Sub(pub.Start); d != cur {
			// (On no grid the job could have had, it is left out: what
			// the run finds at that period says so.)
			if sw := boundary(from, cur, d); !pub.Start.Before(sw) && Aligned(pub.Start, d) {
				out = append(out, checkpoint.Epoch{From: sw.UTC(), Period: d})
				cur = d
			}
		}
		from = pub.End
	}
	if cur != g.Period {
		out = append(out, checkpoint.Epoch{From: boundary(from, cur, g.Period).UTC(), Period: g.Period})
	}
	return out
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

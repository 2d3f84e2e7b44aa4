package job

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
)

// loadGrid returns the grid of the job whose state is st (report.Grid
// says which periods exist), with the last period published after the
// checkpoint, if any (one listing of the manifests from the checkpoint's
// on: report.Grid.Published). A state written before grids were recorded
// (a checkpoint and no grid) gets its grid inferred from the sink once;
// a run holding the lease writes it, so that later runs read it.
func (r *runner) loadGrid(ctx context.Context, st *checkpoint.State) (report.Grid, error) {
	if !st.Checkpoint.IsZero() && len(st.Grid) == 0 {
		pubs, err := r.publisher().PublishedBefore(ctx, st.Checkpoint)
		if err != nil {
			return report.Grid{}, fmt.Errorf("infer the period grid from the manifests: %w", err)
		}
		grid := inferGrid(pubs, st.Checkpoint, r.j.Start, r.j.Period)
		r.j.Log.Info("inferred the period grid of the delivered periods from the manifests in the sink",
			"manifests", len(pubs), "epochs", fmtGrid(grid))
		if r.lease != nil {
			if err := r.j.State.Update(ctx, r.j.Name, r.leaseNow(), r.j.now(), checkpoint.Update{Grid: grid}); err != nil {
				return report.Grid{}, fmt.Errorf("record the period grid: %w", err)
			}
		}
		st.Grid = grid
	}
	g := report.NewGrid(*st, r.j.Start, r.j.Period)
	from := st.Checkpoint
	if from.IsZero() {
		var err error
		if from, err = g.First(); err != nil {
			return g, nil // nothing delivered and no report.start: run says so
		}
	}
	pub, err := r.publisher().LastFrom(ctx, from)
	if err != nil {
		return report.Grid{}, fmt.Errorf("look for periods published after the checkpoint: %w", err)
	}
	if !pub.End.IsZero() {
		r.j.Log.Info("a period after the checkpoint is published already: the grid keeps it as it was published until its end",
			"checkpoint", st.Checkpoint.UTC().Format(time.RFC3339), "last_published", pub.String())
		g.Published = pub
	}
	return g, nil
}

// inferGrid works out the grid of the periods delivered up to cp from the
// manifests in the sink (pubs): it walks back from cp, each step to the
// period whose manifest ends where the later one starts. Of manifests
// that end at the same time, one that verify --repair published as
// revision 1 (what verify --repair of earlier versions invented over
// delivered periods) is taken only when there is no other. The walk stops
// where no manifest ends, and at a period before report.start (start)
// that verify --repair published as revision 1 (invented before go-live).
// Runs of periods of one length make one epoch; a period of an earlier
// version shortened at a switch of report.period belongs to the epoch
// after it. With no manifest at all (the sink was emptied), the grid is
// the configured period d back to report.start (or the period ending at
// cp).
func inferGrid(pubs []publish.Published, cp, start time.Time, d time.Duration) []checkpoint.Epoch {
	byEnd := map[int64][]publish.Published{}
	for _, p := range pubs {
		byEnd[p.Period.End.UnixMilli()] = append(byEnd[p.Period.End.UnixMilli()], p)
	}
	invented := func(p publish.Published) bool { return p.Revision == 1 && p.Reason == report.ReasonRepair }
	var chain []report.Period // newest first
	for at := cp; ; {
		cands := byEnd[at.UnixMilli()]
		if len(cands) == 0 {
			break
		}
		i := slices.IndexFunc(cands, func(p publish.Published) bool { return !invented(p) })
		if i < 0 {
			i = 0
		}
		c := cands[i]
		if invented(c) && !start.IsZero() && c.Period.Start.Before(start) {
			break
		}
		chain = append(chain, c.Period)
		at = c.Period.Start
	}
	slices.Reverse(chain)
	if len(chain) == 0 {
		from := report.PeriodAt(cp.Add(-time.Nanosecond), d).Start
		if !start.IsZero() && start.Before(cp) {
			from = start
		}
		return []checkpoint.Epoch{{From: from.UTC(), Period: d}}
	}
	lengths := make([]time.Duration, len(chain))
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		l := p.End.Sub(p.Start)
		if !slices.Contains(report.Periods, l) || !report.Aligned(p.Start, l) {
			if i+1 < len(chain) {
				l = lengths[i+1]
			} else {
				l = d
			}
		}
		lengths[i] = l
	}
	var grid []checkpoint.Epoch
	for i, p := range chain {
		if len(grid) == 0 || grid[len(grid)-1].Period != lengths[i] {
			grid = append(grid, checkpoint.Epoch{From: p.Start.UTC(), Period: lengths[i]})
		}
	}
	return grid
}

func fmtGrid(grid []checkpoint.Epoch) string {
	s := ""
	for i, e := range grid {
		if i > 0 {
			s += ", "
		}
		s += report.FormatDuration(e.Period) + " from " + e.From.UTC().Format(time.RFC3339)
	}
	return s
}

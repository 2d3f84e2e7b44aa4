package job

import (
	"context"
	"fmt"
	"time"

	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// Statements configures the monthly close (statements.*).
type Statements struct {
	Loc        *time.Location
	CloseAfter time.Duration
	Formats    monthclose.Formats
	// RenderPDF renders an agency's statement PDF (nil: no PDF).
	RenderPDF monthclose.Renderer
	// Docs is what the statements are made documents with (the agency
	// directory, statements.issuer).
	Docs monthclose.Documents
}

// closer returns the run's monthly close.
func (r *runner) closer() *monthclose.Closer {
	s := r.j.Statements
	loc := s.Loc
	if loc == nil {
		loc = time.UTC
	}
	c := &monthclose.Closer{
		Periods: r.publisher(), Job: r.j.Name, Version: r.j.Version, RunID: r.j.RunID, Loc: loc,
		CloseAfter: s.CloseAfter, Formats: s.Formats, RenderPDF: s.RenderPDF, Concurrency: r.j.Concurrency,
		Dir: r.scratch.Path, Log: r.j.Log, Now: r.j.now, Docs: s.Docs,
	}
	if r.lease != nil {
		c.Fence = r.lease
	}
	return c
}

// statements brings the monthly statements up to date at now (see
// monthclose.Closer.Update) from the job's current state. A dry run
// writes nothing and skips it.
func (r *runner) statements(ctx context.Context, now time.Time, closeEarly string) (monthclose.Result, error) {
	if r.lease == nil {
		return monthclose.Result{}, nil
	}
	st, err := r.j.State.Load(ctx, r.j.Name)
	if err != nil {
		return monthclose.Result{}, fmt.Errorf("load checkpoint: %w", err)
	}
	g := r.grid
	g.Checkpoint = st.Checkpoint
	rec := monthclose.Record{Grid: g, Rechecks: st.Rechecks, RecheckAfter: r.j.RecheckAfter}
	res, err := r.closer().Update(ctx, now, rec, closeEarly)
	if err != nil {
		return res, r.explain(ctx, fmt.Errorf("monthly statements: %w", err))
	}
	return res, nil
}

// CloseOptions select what Close does.
type CloseOptions struct {
	// Now is the report clock.
	Now time.Time
	// Month, when set, is made final now (statement --close).
	Month string
}

// Close brings the monthly statements up to date, as every run does at its
// end, and with o.Month set finalises that month early.
func (j *Job) Close(ctx context.Context, o CloseOptions) (monthclose.Result, error) {
	if o.Now.IsZero() {
		o.Now = j.now()
	}
	r, ctx, _, err := j.start(ctx, RunOptions{Now: o.Now})
	if err != nil {
		return monthclose.Result{}, err
	}
	defer r.stop(ctx)
	return r.statements(ctx, o.Now, o.Month)
}

// Reader returns a monthly close that only reads (statement without
// --close, status): no lease, no writes; dir holds what it downloads.
func (j *Job) Reader(dir string) *monthclose.Closer {
	r := &runner{j: j}
	loc := j.Statements.Loc
	if loc == nil {
		loc = time.UTC
	}
	return &monthclose.Closer{Periods: r.publisher(), Job: j.Name, Version: j.Version, RunID: j.RunID, Loc: loc,
		CloseAfter: j.Statements.CloseAfter, Formats: j.Statements.Formats, Concurrency: j.Concurrency, Dir: dir, Log: j.Log,
		Docs: j.Statements.Docs}
}

// verifyMonths checks the statements of the months ps touch (see
// monthclose.Closer.Verify); with repair it repairs them.
func (r *runner) verifyMonths(ctx context.Context, ps []report.Period, repair bool) ([]monthclose.MonthCheck, error) {
	st, err := r.j.State.Load(ctx, r.j.Name)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	g := r.grid
	g.Checkpoint = st.Checkpoint
	rec := monthclose.Record{Grid: g, Rechecks: st.Rechecks, RecheckAfter: r.j.RecheckAfter}
	c := r.closer()
	return c.Verify(ctx, rec, monthclose.MonthsOf(ps, c.Loc), repair && r.lease != nil)
}

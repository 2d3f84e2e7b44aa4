// Package monthclose is the monthly close: it keeps the statements of
// draft months up to date with the latest revision of their periods,
// issues the final statement of a month once its close time has passed
// and its rechecks are done (or on request), and books a restatement of a
// period of a final month as a prior-period adjustment in the next month
// that is not final (SPEC section 7). It reads the delivered record only
// (period manifests, summaries and adjustments) and publishes each month
// under the same rules as a period: immutable content-hash names, a
// conditional manifest written last, fenced writes, cleanup.
//
// Which months to rebuild comes from the due markers
// (report.StatementDueKey) that the period publisher writes before each
// period manifest: a crash anywhere between a period's publication and its
// month's leaves the marker, and the next command that publishes (or
// `statement`) takes it in. A marker is deleted only once every month it
// touches is published.
package monthclose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/statement"
)

// Renderer writes an agency's statement as a PDF (package statement/pdf).
type Renderer func(w io.Writer, s *statement.Agency) error

// Formats are the per-agency statement files (statements.agency_files).
type Formats struct{ PDF, CSV, Parquet bool }

// ParseFormats reads statements.agency_files ("pdf", "csv", "parquet";
// anything else is ignored: the config refuses it first).
func ParseFormats(names []string) Formats {
	var f Formats
	for _, n := range names {
		switch n {
		case "pdf":
			f.PDF = true
		case "csv":
			f.CSV = true
		case "parquet":
			f.Parquet = true
		}
	}
	return f
}

// names returns the formats as statements.agency_files lists them.
func (f Formats) names() []string {
	out := []string{}
	for _, x := range []struct {
		on   bool
		name string
	}{{f.PDF, "pdf"}, {f.CSV, "csv"}, {f.Parquet, "parquet"}} {
		if x.on {
			out = append(out, x.name)
		}
	}
	return out
}

// Closer runs the close of one job's statements in one sink.
type Closer struct {
	// Periods reads the period manifests and files (its Bucket is the sink).
	Periods *publish.Publisher
	// Fence is checked before every write; nil when none is needed.
	Fence publish.Fence
	Job   string
	// Version is written into manifests; RunID names intents.
	Version, RunID string
	Loc            *time.Location
	CloseAfter     time.Duration
	Formats        Formats
	RenderPDF      Renderer
	Concurrency    int
	// Dir is a scratch folder for the files being built.
	Dir string
	Log *slog.Logger
	// Now stamps manifests (default time.Now).
	Now func() time.Time
	// Docs is what the statements are made documents with (document.go).
	Docs Documents

	docs *docState // what this close read for Docs (documents)
}

// Record is what the job's state says of the periods: which exist and
// are delivered (Grid, up to Grid.Checkpoint), and which are still owed a
// recheck.
type Record struct {
	Grid         report.Grid
	Rechecks     []checkpoint.Recheck
	RecheckAfter []time.Duration
}

// Result is what an Update did.
type Result struct {
	// Months are the months whose statements were published, ascending.
	Months []MonthResult
	// Adjustments is how many prior-period adjustments were booked.
	Adjustments int
	// Closed is how many months became final.
	Closed int
	// UnlistedAgencies is how many agencies of the months published are
	// missing from the agency directory (0 without one).
	UnlistedAgencies int
}

// Add returns what r and then o did, as one result: the months of both
// (a month published by each is in twice, once per revision), and the
// agencies missing from the directory counted once per close at most (the
// larger count: both closes usually publish the same month).
func (r Result) Add(o Result) Result {
	return Result{Months: append(slices.Clip(r.Months), o.Months...), Adjustments: r.Adjustments + o.Adjustments,
		Closed: r.Closed + o.Closed, UnlistedAgencies: max(r.UnlistedAgencies, o.UnlistedAgencies)}
}

// Uploaded is the number of objects the months of r uploaded.
func (r Result) Uploaded() int {
	n := 0
	for _, m := range r.Months {
		n += m.Uploaded
	}
	return n
}

// MonthResult is one month published.
type MonthResult struct {
	Month     string `json:"month"`
	Status    string `json:"status"`
	Revision  int    `json:"statement_revision"`
	Reason    string `json:"reason"`
	Agencies  int    `json:"agencies"`
	Uploaded  int    `json:"uploaded"`
	Manifest  string `json:"manifest"`
	Booked    int    `json:"adjustments_booked,omitempty"`
	Published bool   `json:"-"`
}

// ErrNotClosable is wrapped by the error of an early close that cannot be
// done (the month is not fully delivered).
var ErrNotClosable = errors.New("month cannot be closed")

func (c *Closer) bucket() *sink.Bucket { return c.Periods.Bucket }

func (c *Closer) fence() error {
	if c.Fence == nil {
		return nil
	}
	return c.Fence.Check()
}

func (c *Closer) now() time.Time {
	if c.Now == nil {
		return time.Now().UTC()
	}
	return c.Now().UTC()
}

// Update brings the statements up to date at now (the report clock):
// it takes in every due marker, rebuilds the draft months whose periods
// changed, books the restatements of final months' periods, issues the
// final statement of every month whose close time has passed and whose
// rechecks are done, and, when closeEarly names a month, makes it final
// now. Then it deletes the markers it took in.
func (c *Closer) Update(ctx context.Context, now time.Time, rec Record, closeEarly string) (res Result, err error) {
	c.docs = nil // read once per close (document.go)
	defer func() { res.UnlistedAgencies = c.warnUnlisted() }()
	dues, err := c.dueMarkers(ctx, rec.Grid)
	if err != nil {
		return res, err
	}
	months, err := c.listMonths(ctx)
	if err != nil {
		return res, err
	}
	months.light = true
	// Every month the sink has a statement for, and its manifest.
	for _, mo := range months.names() {
		if _, err := months.read(ctx, c, mo); err != nil {
			return res, err
		}
	}
	work := map[string]*monthWork{}
	get := func(m string) *monthWork {
		w := work[m]
		if w == nil {
			w = &monthWork{}
			work[m] = w
		}
		return w
	}
	for _, d := range dues {
		m := statement.MonthOf(d.period.Start, c.Loc)
		cur, err := months.read(ctx, c, m)
		if err != nil {
			return res, err
		}
		if !cur.final() {
			get(m).changed = true
			continue
		}
		target, err := months.firstOpenAfter(ctx, c, m)
		if err != nil {
			return res, err
		}
		get(target).adjust = append(get(target).adjust, d.period)
	}
	if closeEarly != "" {
		if err := c.checkEarly(ctx, months, rec, closeEarly); err != nil {
			return res, err
		}
		get(closeEarly).final, get(closeEarly).reason = true, ReasonCloseEarly
	}
	// Every month with a statement, and every month about to get its
	// first one (a month first published after its close time, e.g. when
	// a run catches up on it, is issued final at once).
	candidates := months.names()
	for m := range work {
		if !slices.Contains(candidates, m) {
			candidates = append(candidates, m)
		}
	}
	for _, m := range candidates {
		cur := months.cur[m]
		if cur != nil && cur.m != nil && cur.m.Final() || (cur == nil || cur.m == nil) && work[m] == nil {
			if cur != nil && len(cur.intents) > 0 && work[m] == nil {
				get(m) // finish its cleanup
			}
			continue
		}
		start, end, err := statement.Bounds(m, c.Loc)
		if err != nil {
			return res, err
		}
		if c.closable(start, end, rec, now) {
			w := get(m)
			if !w.final {
				w.final, w.reason = true, ReasonClose
			}
		}
		if cur != nil && len(cur.intents) > 0 && work[m] == nil {
			get(m) // finish its cleanup
		}
	}
	names := make([]string, 0, len(work))
	for m := range work {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, m := range names {
		w := work[m]
		w.now = now
		if w.final && !w.changed && w.reason == ReasonClose {
			// A month closing on time is rebuilt from its periods too: the
			// final statement is always the latest revision of each.
			w.changed = true
		}
		mr, err := c.rebuild(ctx, months, rec, m, w)
		if err != nil {
			return res, fmt.Errorf("statements of %s: %w", m, err)
		}
		res.Adjustments += mr.Booked
		if mr.Published {
			res.Months = append(res.Months, mr)
			if mr.Status == string(statement.Final) {
				res.Closed++
			}
		}
	}
	crashpoint.Hit(crashpoint.BeforeDueDelete)
	if err := c.deleteDue(ctx, dues); err != nil {
		return res, err
	}
	return res, nil
}

// monthWork is what a month's rebuild must take in.
type monthWork struct {
	changed bool            // one of its own periods was published
	adjust  []report.Period // periods of final months to book here
	final   bool            // issue the final statement
	reason  string
	force   bool // publish a new revision even if nothing changed (verify --repair)
	// legacyChain builds the statements with the audit chain of a month
	// manifest written before digests (Manifest.LegacyChain): only to
	// check or restore that month's own files, never to publish.
	legacyChain bool
	// record builds the statements' documents from the month manifest it
	// is given as prev (verify, a restore), not from the directory and
	// config (document.go).
	record bool
	// now is the close's instant: a final's issue date.
	now time.Time
}

// closable reports whether the month [start, end)'s close time has
// passed, every period of the month is delivered and none of them is still
// owed a recheck.
func (c *Closer) closable(start, end time.Time, rec Record, now time.Time) bool {
	if now.Before(end.Add(c.CloseAfter)) || rec.Grid.Checkpoint.Before(end) {
		return false
	}
	return owedRechecks(start, end, rec) == 0
}

// owedRechecks counts the periods in [start, end) still owed a recheck.
func owedRechecks(start, end time.Time, rec Record) int {
	n := 0
	for _, e := range rec.Rechecks {
		if !e.Start.Before(start) && e.Start.Before(end) && !report.NextRecheck(e, rec.RecheckAfter).IsZero() {
			n++
		}
	}
	return n
}

// checkEarly refuses an early close of a month that is not fully
// delivered, or already final.
func (c *Closer) checkEarly(ctx context.Context, months *monthSet, rec Record, m string) error {
	start, end, err := statement.Bounds(m, c.Loc)
	if err != nil {
		return err
	}
	cur, err := months.read(ctx, c, m)
	if err != nil {
		return err
	}
	switch {
	case cur.final():
		return fmt.Errorf("%w: %s is final already (statement revision %d)", ErrNotClosable, m, cur.m.StatementRevision)
	case rec.Grid.Checkpoint.Before(end):
		return fmt.Errorf("%w: %s is not fully delivered: the checkpoint is %s, the month ends %s (%s)", ErrNotClosable, m,
			fmtTime(rec.Grid.Checkpoint), end.Format(time.RFC3339), c.Loc)
	case len(rec.Grid.Between(start, end)) == 0:
		return fmt.Errorf("%w: the job has no period in %s", ErrNotClosable, m)
	}
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "none yet"
	}
	return t.UTC().Format(time.RFC3339)
}

// due is one due marker.
type due struct {
	key    string
	period report.Period
}

// dueMarkers lists the due markers, oldest period first.
func (c *Closer) dueMarkers(ctx context.Context, g report.Grid) ([]due, error) {
	objs, err := c.bucket().List(ctx, report.DueStatementsPrefix)
	if err != nil {
		return nil, fmt.Errorf("list due statements: %w", err)
	}
	var out []due
	for _, o := range objs {
		name, ok := strings.CutPrefix(o.Key, report.DueStatementsPrefix+"period=")
		name, ok2 := strings.CutSuffix(name, ".json")
		t, err := time.Parse("20060102T1504Z", name)
		if !ok || !ok2 || err != nil {
			c.Log.Warn("ignoring an object that is no due marker", "key", o.Key)
			continue
		}
		p, ok := g.At(t)
		if !ok || !p.Start.Equal(t) {
			return nil, fmt.Errorf("due marker %s names no period of the job's grid", c.bucket().URL(o.Key))
		}
		if p.End.After(g.Checkpoint) {
			// A delivery whose checkpoint move has not happened yet (a
			// crash, or the run in progress): kept for the close after it.
			continue
		}
		out = append(out, due{key: o.Key, period: p})
	}
	slices.SortFunc(out, func(a, b due) int { return a.period.Start.Compare(b.period.Start) })
	return out, nil
}

// deleteDue deletes the markers taken in.
func (c *Closer) deleteDue(ctx context.Context, dues []due) error {
	keys := make([]string, len(dues))
	for i, d := range dues {
		keys[i] = d.key
	}
	if err := c.deleteAll(ctx, keys); err != nil {
		return fmt.Errorf("delete due markers: %w", err)
	}
	return nil
}

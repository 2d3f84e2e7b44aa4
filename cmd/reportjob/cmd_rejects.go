package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/job"
	lookups "github.com/reportjob/reportjob/internal/lookup"
	"github.com/reportjob/reportjob/internal/report"
)

// rejectRow is a reject as JSON.
type rejectRow struct {
	Period        string         `json:"period"`
	Revision      int            `json:"revision"`
	Object        string         `json:"object"`
	Line          int            `json:"line"`
	AgencyID      string         `json:"agency_id,omitempty"`
	TransactionID string         `json:"transaction_id,omitempty"`
	PartitionKey  string         `json:"partition_key"`
	SortKey       string         `json:"sort_key"`
	Field         string         `json:"field,omitempty"`
	Value         string         `json:"value,omitempty"`
	Reason        string         `json:"reason"`
	Item          map[string]any `json:"item,omitempty"`
}

func rejectJSON(rj *lookups.Reject) rejectRow {
	item := make(map[string]any, len(rj.Item))
	for k, v := range rj.Item {
		item[k] = v
	}
	return rejectRow{Period: rj.Period.Name(), Revision: rj.Revision, Object: rj.Key, Line: rj.Line,
		AgencyID: rj.Attr("agency_id"), TransactionID: rj.Attr("transaction_id"),
		PartitionKey: rj.PartitionKey, SortKey: rj.SortKey, Field: rj.Field, Value: rj.Value, Reason: rj.Reason, Item: item}
}

func cmdRejects(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "rejects")
	agency := fs.String("agency", "", "only the rejects of items of this agency_id")
	lf := addLookupFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *lf.limit <= 0:
		return usagef("rejects --limit %d: want a positive number", *lf.limit)
	case !lf.from.t.IsZero() && !lf.to.t.IsZero() && !lf.to.t.After(lf.from.t):
		return usagef("rejects: --to %s must be after --from %s", lf.to.String(), lf.from.String())
	}
	started := time.Now()
	sum := lookupSummary{Command: "rejects", Job: c.cfg.JobName, Agency: *agency, From: lf.from.String(), To: lf.to.String()}
	r, st, _, err := c.openLookup(ctx, lf.from.t, lf.to.t)
	if err != nil {
		return err
	}
	defer st.close()
	pg, err := r.Rejects(ctx, lookups.Query{Agency: *agency, Limit: *lf.limit, Cursor: *lf.cursor})
	if err != nil {
		return err
	}
	if *lf.asJSON {
		for i := range pg.Rows {
			c.printLine(rejectJSON(&pg.Rows[i]))
		}
	} else {
		printRejectTable(c.stdout, pg.Rows)
		if len(pg.Rows) == 0 {
			fmt.Fprintf(c.stdout, "no rejects in the periods read\n")
		}
		for _, p := range pg.Restated {
			fmt.Fprintf(c.stdout, "period %s was restated since the cursor was made: this page goes on with its new revision\n", p.Name())
		}
		if pg.Next != "" {
			a := ""
			if *agency != "" {
				a = " --agency " + quoteArg(*agency)
			}
			fmt.Fprintf(c.stdout, "more: %s rejects%s --limit %d --cursor %s\n", c.invocation(), a, *lf.limit, pg.Next)
		}
	}
	n := len(pg.Rows)
	sum.RejectRows, sum.NextCursor, sum.PeriodsRead = &n, &pg.Next, pg.Periods
	for _, p := range pg.Restated {
		sum.Restated = append(sum.Restated, p.Name())
	}
	sum.Gets, sum.Lists = r.Requests()
	sum.Status = "ok"
	sum.DurationMS = time.Since(started).Milliseconds()
	c.printJSON(sum)
	return nil
}

func printRejectTable(w io.Writer, rows []lookups.Reject) {
	if len(rows) == 0 {
		return
	}
	t := table{cols: []column{
		{head: "PERIOD"}, {head: "SORT_KEY", max: 40}, {head: "AGENCY", max: 16}, {head: "TRANSACTION", max: 16},
		{head: "FIELD", max: 14}, {head: "REASON", max: 100},
	}}
	for i := range rows {
		rj := &rows[i]
		t.add(rj.Period.Name(), rj.SortKey, rj.Attr("agency_id"), rj.Attr("transaction_id"), rj.Field, rj.Reason)
	}
	t.print(w)
}

// statusRejects is status's view of the rejects of the last day.
type statusRejects struct {
	Count   int64       `json:"count"`
	Periods int         `json:"periods"`
	Newest  []rejectRow `json:"newest"`
}

// statusNewestRejects is how many rejects status shows.
const statusNewestRejects = 3

// lastDayRejects returns the rejects of the delivered periods that start
// in the day before now: their count from the manifests (one read per
// period), and the newest few from the rejects files.
func (c *cli) lastDayRejects(ctx context.Context, st *store, grid report.Grid, checkpoint, now time.Time) (*statusRejects, error) {
	if c.cfg.Sink.Dir != "" {
		if _, err := os.Stat(c.cfg.Sink.Dir); err != nil {
			return nil, nil // nothing delivered there; do not create the folder
		}
	}
	b, err := openBucket(ctx, c)
	if err != nil {
		return nil, err
	}
	to := now
	if checkpoint.Before(to) {
		to = checkpoint
	}
	r := &lookups.Reader{Objects: b.Bucket, Periods: grid.Between(now.Add(-24*time.Hour), to)}
	counts, err := r.CountRejects(ctx, time.Time{}, time.Time{})
	if err != nil {
		return nil, err
	}
	out := &statusRejects{Periods: len(counts), Newest: []rejectRow{}}
	if len(counts) == 0 {
		return out, nil
	}
	r.Periods = r.Periods[:0]
	for _, rc := range counts {
		out.Count += rc.Rejects
		r.Periods = append(r.Periods, rc.Period)
	}
	pg, err := r.Rejects(ctx, lookups.Query{Limit: statusNewestRejects})
	if err != nil {
		return nil, err
	}
	for i := range pg.Rows {
		row := rejectJSON(&pg.Rows[i])
		row.Item = nil
		out.Newest = append(out.Newest, row)
	}
	return out, nil
}

// printStatusRejects prints status's lines about the rejects.
func printStatusRejects(w io.Writer, sr *statusRejects, now time.Time, invocation string) {
	switch {
	case sr == nil:
		return
	case sr.Count == 0:
		fmt.Fprintf(w, "rejects:      none in the last day\n")
		return
	}
	fmt.Fprintf(w, "rejects:      %d in the last day, in %d period(s) (list them: %s rejects --from %s); newest:\n",
		sr.Count, sr.Periods, invocation, now.Add(-24*time.Hour).UTC().Format(time.RFC3339))
	for _, r := range sr.Newest {
		reason := r.Reason
		if rs := []rune(reason); len(rs) > 100 {
			reason = string(rs[:99]) + "…"
		}
		fmt.Fprintf(w, "              %s %s %s: %s\n", r.Period, r.SortKey, r.Field, reason)
	}
}

// rejectNote tells the operator, on stderr, about the rejects of the
// revisions a run published (delivered periods, and restatements that
// added rejects), and returns how many periods have them.
func (c *cli) rejectNote(res job.Result, dryRun bool) int {
	var names []string
	var n int64
	for _, pr := range res.Periods {
		if m := pr.Manifest; m != nil && m.Rejects > 0 && pr.Outcome == job.OutcomePublished {
			names, n = append(names, pr.Period.Name()), n+m.Rejects
		}
	}
	for _, pr := range res.Rechecks {
		if m := pr.Manifest; pr.Restated() && m.Rejects > pr.Previous.Rejects {
			names, n = append(names, pr.Period.Name()), n+m.Rejects-pr.Previous.Rejects
		}
	}
	if len(names) == 0 || dryRun {
		return 0
	}
	shown := names
	if len(shown) > 5 {
		shown = append(shown[:5:5], "...")
	}
	fmt.Fprintf(c.stderr, "reportjob: %d reject(s) in %d period(s) published by this run (%s): list them with `%s rejects --from %s`\n",
		n, len(names), strings.Join(shown, ", "), c.invocation(), periodTime(slices.Min(names)))
	return len(names)
}

// periodTime returns the RFC 3339 start of the period named name.
func periodTime(name string) string {
	t, err := time.Parse("20060102T1504Z", name)
	if err != nil {
		return name
	}
	return t.UTC().Format(time.RFC3339)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

type statusLease struct {
	Owner   string `json:"owner"`
	Expires string `json:"expires,omitempty"` // empty once released
	Held    bool   `json:"held"`
}

type statusRestated struct {
	Period      string `json:"period"`
	Revision    int    `json:"revision"`
	Reason      string `json:"reason"`
	At          string `json:"at"`
	ItemsBefore int64  `json:"items_before"`
	ItemsAfter  int64  `json:"items_after"`
}

type statusReport struct {
	Command         string           `json:"command"`
	Job             string           `json:"job"`
	Config          string           `json:"config"` // the config file read, "" for none
	Store           string           `json:"store"`  // the embedded file's absolute path, or the DynamoDB tables
	Sink            string           `json:"sink"`   // the sink's absolute folder, or its s3:// URL
	Now             string           `json:"now"`
	Checkpoint      string           `json:"checkpoint,omitempty"`
	NextPeriodStart string           `json:"next_period_start,omitempty"`
	NextPeriodEnd   string           `json:"next_period_end,omitempty"`
	NextDueAt       string           `json:"next_due_at,omitempty"`
	PeriodsBehind   int              `json:"periods_behind"`
	LagSeconds      int64            `json:"lag_seconds"`
	RechecksDue     int              `json:"rechecks_due"`
	RechecksOwed    int              `json:"rechecks_owed"`
	NextRecheckAt   string           `json:"next_recheck_at,omitempty"`
	Restated        []statusRestated `json:"restated"`
	Lease           *statusLease     `json:"lease,omitempty"`
	// Statements: the months not final yet and the last final one.
	OpenMonths     []monthclose.MonthStatus `json:"open_months,omitempty"`
	LastFinalMonth *monthclose.MonthStatus  `json:"last_final_month,omitempty"`
	StatementsNote string                   `json:"statements_note,omitempty"`
	RejectsLastDay *statusRejects           `json:"rejects_last_day,omitempty"`
	// Delivery is the outbox (delivery.*): what is still to send, and what
	// keeps failing. Absent when delivery is not configured.
	Delivery *statusDelivery `json:"delivery,omitempty"`
	Note     string          `json:"note,omitempty"`
}

func cmdStatus(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "status")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	var now timeFlag
	fs.Var(&now, "now", "fix the clock (replay and tests)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if now.t.IsZero() {
		now.t = time.Now().UTC()
	}
	r := statusReport{Command: "status", Job: c.cfg.JobName, Now: now.t.Format(time.RFC3339), Restated: []statusRestated{},
		Config: configFile(c.cfg), Store: storeWhere(c.cfg), Sink: sinkWhere(c.cfg)}
	// status creates nothing: a store file that does not exist yet is an
	// empty state.
	var state checkpoint.State
	var st *store
	if storeMissing(c.cfg) {
		r.Store += " (does not exist yet)"
	} else {
		var err error
		if st, err = openStoreToRead(ctx, c, true); err != nil {
			return err
		}
		defer st.close()
		if state, err = st.Load(ctx, c.cfg.JobName); err != nil {
			return fmt.Errorf("load checkpoint: %w", err)
		}
	}
	cfg := c.cfg.Report
	delays := c.cfg.Report.RecheckAfter
	var nextRecheck time.Time
	for _, e := range state.Rechecks {
		next := report.NextRecheck(e, delays)
		if next.IsZero() {
			continue
		}
		r.RechecksOwed++
		if report.RecheckDue(e, delays, now.t) {
			r.RechecksDue++
		} else if nextRecheck.IsZero() || next.Before(nextRecheck) {
			nextRecheck = next
		}
	}
	if !nextRecheck.IsZero() {
		r.NextRecheckAt = nextRecheck.UTC().Format(time.RFC3339)
	}
	for _, rs := range state.Restated {
		r.Restated = append(r.Restated, statusRestated{
			Period: report.Period{Start: rs.Start, End: rs.End}.Name(), Revision: rs.Revision, Reason: rs.Reason,
			At: rs.At.UTC().Format(time.RFC3339), ItemsBefore: rs.ItemsBefore, ItemsAfter: rs.ItemsAfter,
		})
	}
	if l := state.Lease; l.Owner != "" {
		r.Lease = &statusLease{Owner: l.Owner, Held: l.Held(now.t)}
		if !l.Expires.IsZero() {
			r.Lease.Expires = l.Expires.UTC().Format(time.RFC3339)
		}
	}
	from := state.Checkpoint
	if neverRan(state) {
		// A first run refuses to deliver periods the sink already holds
		// (see refuseFirstRun): say so now.
		if err := c.refuseFirstRun(ctx); errors.Is(err, errSinkHasPeriods) {
			r.Note = err.Error()
		}
	}
	if !from.IsZero() {
		r.Checkpoint = from.UTC().Format(time.RFC3339)
		r.LagSeconds = int64(now.t.Sub(from) / time.Second)
	}
	grid := report.NewGrid(state, cfg.Start, cfg.Period)
	_, behind, err := grid.Due(now.t, cfg.Lateness, 0)
	switch {
	case errors.Is(err, report.ErrNoStart):
		r.Note = "no checkpoint yet and report.start is unset: `run` will refuse to start"
	case r.Note != "":
	case err != nil:
		return err
	default:
		if from.IsZero() {
			from, _ = grid.First()
		}
		next, _ := grid.At(from)
		next.Start = from.UTC()
		r.PeriodsBehind = behind
		r.NextPeriodStart = next.Start.Format(time.RFC3339)
		r.NextPeriodEnd = next.End.Format(time.RFC3339)
		r.NextDueAt = next.End.Add(cfg.Lateness).Format(time.RFC3339)
	}
	if !state.Checkpoint.IsZero() {
		if r.RejectsLastDay, err = c.lastDayRejects(ctx, st, grid, state.Checkpoint, now.t); err != nil {
			c.log.Warn("status: read the rejects of the last day", "err", err)
		}
	}
	if st != nil {
		c.statusStatements(ctx, st, &r)
		if deliveryConfigured(c) {
			r.Delivery = c.statusDelivery(ctx, st)
		}
	}
	if *asJSON {
		c.printJSON(r)
		return nil
	}
	w := c.stdout
	fmt.Fprintf(w, "job:          %s\n", r.Job)
	fmt.Fprintf(w, "config:       %s\n", configWhere(c.cfg))
	fmt.Fprintf(w, "store:        %s\n", r.Store)
	fmt.Fprintf(w, "sink:         %s\n", r.Sink)
	fmt.Fprintf(w, "now:          %s\n", r.Now)
	if r.Checkpoint == "" {
		fmt.Fprintf(w, "checkpoint:   none yet\n")
	} else {
		fmt.Fprintf(w, "checkpoint:   %s (lag %s)\n", r.Checkpoint, formatLag(time.Duration(r.LagSeconds)*time.Second))
	}
	if r.Note != "" {
		fmt.Fprintf(w, "note:         %s\n", r.Note)
	} else {
		due := "due now"
		if t, _ := time.Parse(time.RFC3339, r.NextDueAt); t.After(now.t) {
			due = "due in " + t.Sub(now.t).Round(time.Second).String()
		}
		fmt.Fprintf(w, "next period:  %s to %s, %s (at %s)\n", r.NextPeriodStart, r.NextPeriodEnd, due, r.NextDueAt)
		fmt.Fprintf(w, "behind:       %d period(s) due\n", r.PeriodsBehind)
	}
	switch {
	case len(delays) == 0:
		fmt.Fprintf(w, "rechecks:     off (report.recheck_after is empty)\n")
	case r.RechecksOwed == 0:
		fmt.Fprintf(w, "rechecks:     none pending\n")
	default:
		fmt.Fprintf(w, "rechecks:     %d due now, %d period(s) owed one", r.RechecksDue, r.RechecksOwed)
		if r.NextRecheckAt != "" {
			fmt.Fprintf(w, ", next at %s", r.NextRecheckAt)
		}
		fmt.Fprintln(w)
	}
	if len(r.Restated) == 0 {
		fmt.Fprintf(w, "restated:     none recently\n")
	}
	for i, rs := range r.Restated {
		label := "restated:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-13s %s revision %d (%s) at %s, items %d -> %d\n", label, rs.Period, rs.Revision, rs.Reason, rs.At, rs.ItemsBefore, rs.ItemsAfter)
	}
	printStatusRejects(w, r.RejectsLastDay, now.t, c.invocation())
	switch {
	case r.StatementsNote != "":
		fmt.Fprintf(w, "statements:   %s\n", r.StatementsNote)
	case len(r.OpenMonths) == 0 && r.LastFinalMonth == nil:
		fmt.Fprintf(w, "statements:   none yet\n")
	default:
		for _, m := range r.OpenMonths {
			fmt.Fprintf(w, "statements:   %s %s (revision %d), final after %s", m.Month, m.Status, m.Revision, m.ClosesAt)
			if m.UnlistedAgencies > 0 {
				fmt.Fprintf(w, "; %d agencies not in the agency directory", m.UnlistedAgencies)
			}
			fmt.Fprintln(w)
		}
		if m := r.LastFinalMonth; m != nil {
			fmt.Fprintf(w, "statements:   %s final (revision %d), the last final month\n", m.Month, m.Revision)
		}
	}
	printStatusDelivery(w, r.Delivery)
	switch {
	case r.Lease == nil:
		fmt.Fprintf(w, "lease:        never taken\n")
	case r.Lease.Held:
		fmt.Fprintf(w, "lease:        held by %s until %s\n", r.Lease.Owner, r.Lease.Expires)
	case state.Lease.Expires.IsZero():
		fmt.Fprintf(w, "lease:        free (released by %s)\n", r.Lease.Owner)
	default:
		fmt.Fprintf(w, "lease:        free (last holder %s, expired %s)\n", r.Lease.Owner, r.Lease.Expires)
	}
	return nil
}

// statusStatements adds the months' statements to r; a sink that cannot
// be read is a note, not a failure of status.
func (c *cli) statusStatements(ctx context.Context, st *store, r *statusReport) {
	if c.cfg.Sink.Dir != "" {
		if _, err := os.Stat(c.cfg.Sink.Dir); err != nil {
			return // nothing delivered yet; do not create the folder
		}
	}
	b, err := openBucket(ctx, c)
	if err != nil {
		r.StatementsNote = "cannot read the sink: " + err.Error()
		return
	}
	dir, err := os.MkdirTemp("", "reportjob-status-")
	if err != nil {
		r.StatementsNote = err.Error()
		return
	}
	defer os.RemoveAll(dir)
	open, final, err := c.newJob(st, b, nil).Reader(dir).Overview(ctx)
	if err != nil {
		r.StatementsNote = "cannot read the statements: " + err.Error()
		return
	}
	r.OpenMonths, r.LastFinalMonth = open, final
}

func cmdInit(ctx context.Context, c *cli, args []string) error {
	if err := parseFlags(newFlags(c, "init"), args); err != nil {
		return err
	}
	c.allowNewStore = true
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.close()
	if err := st.init(ctx); err != nil {
		return fmt.Errorf("init store: %w", err)
	}
	b, err := openBucket(ctx, c)
	if err != nil {
		return err
	}
	if err := b.init(ctx); err != nil {
		return fmt.Errorf("init sink: %w", err)
	}
	c.log.Info("initialised", "store", st.where, "sink", sinkURL(c.cfg))
	c.printJSON(map[string]string{"command": "init", "job": c.cfg.JobName, "status": "ok", "store": st.where, "sink": sinkURL(c.cfg)})
	return nil
}

// formatLag prints a lag for people: Go's form under a day ("5m0s",
// "23h59m0s"), days and hours from a day on ("268d 3h").
func formatLag(d time.Duration) string {
	if d < 24*time.Hour {
		return d.String()
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd %dh", days, (d-days*24*time.Hour)/time.Hour)
}

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/metrics"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
)

// verifyPeriod is one period in verify's summary line.
type verifyPeriod struct {
	Period        string            `json:"period"`
	Status        string            `json:"status"`
	Revision      int               `json:"revision,omitempty"`
	ItemsManifest int64             `json:"items_manifest"`
	ItemsNow      int64             `json:"items_now"`
	Problems      []publish.Problem `json:"problems,omitempty"`
	Repaired      string            `json:"repaired,omitempty"`
	NotRepairable string            `json:"not_repairable,omitempty"`
}

type verifySummary struct {
	Command string `json:"command"`
	Job     string `json:"job"`
	RunID   string `json:"run_id"`
	Status  string `json:"status"` // ok | differs | repaired | failed | lease_held | bad_usage | interrupted
	From    string `json:"from"`
	To      string `json:"to"`
	// Periods counts the periods of the range: OK those checked and
	// found whole, NotDelivered those after the checkpoint (nothing to
	// check yet), Differ the others.
	Periods      int `json:"periods"`
	OK           int `json:"ok"`
	NotDelivered int `json:"not_delivered,omitempty"`
	Differ       int `json:"differ"`
	Repaired     int `json:"repaired"`
	// NotRepairable counts the periods --repair left as they were because
	// repairing them would lose part of the billing record, and the final
	// months whose lost objects no rebuild gives byte for byte.
	NotRepairable int `json:"not_repairable,omitempty"`
	// Repriced counts the periods --reprice published at today's rates
	// that did not differ (those that did count as repaired).
	Repriced    int            `json:"repriced,omitempty"`
	Differences []verifyPeriod `json:"differences"`
	// Months are the months whose statements were checked; MonthsDiffer
	// those with a problem, listed in MonthDifferences.
	Months           int                     `json:"months"`
	MonthsDiffer     int                     `json:"months_differ"`
	MonthDifferences []monthclose.MonthCheck `json:"month_differences,omitempty"`
	DurationMS       int64                   `json:"duration_ms"`
	Error            string                  `json:"error,omitempty"`
}

func cmdVerify(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "verify")
	var from, to, now timeFlag
	fs.Var(&from, "from", "first period to check (a period boundary)")
	fs.Var(&to, "to", "end of the range, exclusive (a period boundary)")
	last := fs.String("last", "", "instead of --from/--to: the periods that ended within D before now - report.lateness (3d, 36h)")
	repair := fs.Bool("repair", false, "restate what differs and remove unlisted objects (takes the lease)")
	reprice := fs.Bool("reprice", false, "with --repair: re-price the billed transactions of the range at today's commission rates, on purpose (a new revision where a price changes)")
	fs.Var(&now, "now", "fix the report clock (replay and tests)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var lastD time.Duration
	switch {
	case *last != "" && (!from.t.IsZero() || !to.t.IsZero()):
		return usagef("verify: --last and --from/--to are exclusive")
	case *last != "":
		// The range is worked out on the job's period grid (job.Verify).
		var err error
		if lastD, err = config.ParseDuration(*last); err != nil || lastD <= 0 {
			return usagef("verify --last %q: want a positive duration such as 3d or 36h", *last)
		}
	case from.t.IsZero() || to.t.IsZero():
		return usagef("verify needs --from and --to, or --last")
	}
	if *reprice && !*repair {
		return usagef("verify: --reprice needs --repair")
	}
	started := time.Now()
	sum := verifySummary{Command: "verify", Job: c.cfg.JobName, RunID: c.runID,
		From: from.t.UTC().Format(time.RFC3339), To: to.t.UTC().Format(time.RFC3339), Differences: []verifyPeriod{}}
	if lastD > 0 {
		// The window --last asks for, before the grid aligns it: what the
		// summary says when no period of the job falls in it (none
		// delivered yet).
		end := now.t.Add(-c.cfg.Report.Lateness)
		if now.t.IsZero() {
			end = time.Now().Add(-c.cfg.Report.Lateness)
		}
		sum.From, sum.To = end.Add(-lastD).UTC().Truncate(time.Second).Format(time.RFC3339), end.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	var months []monthclose.MonthCheck
	var planned []report.Period
	monthsDone := false
	work, in, release := c.interruptible(ctx, "the period being verified")
	defer release()
	checks, err := c.verify(work, job.VerifyOptions{From: from.t, To: to.t, Last: lastD, Repair: *repair, Reprice: *reprice, Now: now.t,
		Months: func(mcs []monthclose.MonthCheck) { months, monthsDone = mcs, true }, Range: func(ps []report.Period) { planned = ps }, Stop: in.stopCh()})
	if len(planned) > 0 {
		sum.From = planned[0].Start.UTC().Format(time.RFC3339)
		sum.To = planned[len(planned)-1].End.UTC().Format(time.RFC3339)
	}
	for _, pc := range checks {
		sum.Periods++
		fmt.Fprintln(c.stdout, verifyLine(pc))
		if pc.Status == job.VerifyNotDelivered {
			sum.NotDelivered++
			continue
		}
		if !pc.Differs {
			sum.OK++
			if pc.Repaired != "" {
				sum.Repriced++
			}
			continue
		}
		sum.Differ++
		if pc.Repaired != "" {
			sum.Repaired++
		}
		if pc.NotRepairable != "" {
			sum.NotRepairable++
		}
		sum.Differences = append(sum.Differences, verifyPeriod{
			Period: pc.Period.Name(), Status: pc.Status, Revision: pc.Revision,
			ItemsManifest: pc.ItemsManifest, ItemsNow: pc.ItemsNow, Problems: pc.Problems, Repaired: pc.Repaired,
			NotRepairable: pc.NotRepairable,
		})
	}
	monthsRepaired, monthsNotRepairable := 0, 0
	for _, mc := range months {
		sum.Months++
		fmt.Fprintln(c.stdout, monthLine(mc))
		if mc.Differs() {
			sum.MonthsDiffer++
			sum.MonthDifferences = append(sum.MonthDifferences, mc)
			switch {
			case mc.NotRepairable != "":
				monthsNotRepairable++
				sum.NotRepairable++
			case mc.Repaired != "":
				monthsRepaired++
			}
		}
	}
	if in.fired() != nil {
		err = in.result(err, verifyDone(sum, len(planned), *repair, monthsDone), verifyRest(c.invocation(), planned, len(checks), monthsDone, *repair, *reprice, now.t))
	}
	switch {
	case in.fired() != nil && err != nil:
		sum.Status, sum.Error = failureStatus(err), err.Error()
	case err != nil:
		sum.Status = map[int]string{exitUsage: "bad_usage", exitLeaseHeld: "lease_held"}[exitCode(err)]
		if sum.Status == "" {
			sum.Status = "failed"
		}
		sum.Error = err.Error()
	case monthsNotRepairable > 0:
		sum.Status = "differs"
		err = fmt.Errorf("%d of %d periods differ; the statements of %d of %d months differ, %d not repairable (see not_repairable): %w",
			sum.Differ, sum.Periods, sum.MonthsDiffer, sum.Months, monthsNotRepairable, errDiffers)
	case sum.Differ > 0 && sum.Repaired == sum.Differ:
		sum.Status = "repaired"
		err = fmt.Errorf("%d of %d periods differed (all repaired: run verify again to confirm): %w", sum.Differ, sum.Periods, errDiffers)
	case sum.NotRepairable > 0:
		sum.Status = "differs"
		err = fmt.Errorf("%d of %d periods differ, %d not repairable (kept as they are; see not_repairable): %w",
			sum.Differ, sum.Periods, sum.NotRepairable, errDiffers)
	case sum.Differ > 0:
		sum.Status = "differs"
		err = fmt.Errorf("%d of %d periods differ: %w", sum.Differ, sum.Periods, errDiffers)
	case sum.MonthsDiffer > 0 && monthsRepaired == sum.MonthsDiffer:
		sum.Status = "repaired"
		err = fmt.Errorf("the statements of %d of %d months differed (all repaired: run verify again to confirm): %w", sum.MonthsDiffer, sum.Months, errDiffers)
	case sum.MonthsDiffer > 0:
		sum.Status = "differs"
		err = fmt.Errorf("the statements of %d of %d months differ: %w", sum.MonthsDiffer, sum.Months, errDiffers)
	default:
		sum.Status = "ok"
	}
	sum.DurationMS = time.Since(started).Milliseconds()
	c.printJSON(sum)
	if url := c.cfg.Metrics.PushgatewayURL; url != "" && sum.Status != "bad_usage" && sum.Status != "lease_held" && sum.Status != "failed" &&
		sum.Status != "interrupted" {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
		defer cancel()
		if perr := metrics.PushVerify(pctx, url, metrics.Verify{Job: c.cfg.JobName, End: time.Now(), Periods: sum.Periods, Differences: sum.Differ}, nil); perr != nil {
			c.log.Warn("push metrics", "err", perr)
		}
	}
	return err
}

// verifyDone says what an interrupted verify did: the periods of the
// range (of n) it checked, and what it found and repaired.
func verifyDone(sum verifySummary, n int, repair, monthsChecked bool) string {
	done := fmt.Sprintf("%d of %d periods checked, %d differ", sum.Periods, n, sum.Differ)
	switch {
	case !repair:
		done += ", nothing changed"
	case sum.Repaired+sum.Repriced > 0:
		done += fmt.Sprintf(", %d repaired (the statements take them in at the next run or verify --repair)", sum.Repaired+sum.Repriced)
	default:
		done += ", nothing repaired"
	}
	if monthsChecked {
		return done + fmt.Sprintf("; the statements of %d month(s) checked, %d differ", sum.Months, sum.MonthsDiffer)
	}
	return done + "; the statements were not checked"
}

// verifyRest is the command that verifies the rest of the range after an
// interrupt, ps[checked:].
func verifyRest(prog string, ps []report.Period, checked int, monthsChecked, repair, reprice bool, now time.Time) string {
	switch {
	case checked >= len(ps) && monthsChecked:
		return "nothing was left to check"
	case checked >= len(ps):
		return "to check the statements too, run the same command again"
	}
	cmd := fmt.Sprintf("%s verify --from %s --to %s", prog, ps[checked].Start.UTC().Format(time.RFC3339), ps[len(ps)-1].End.UTC().Format(time.RFC3339))
	if repair {
		cmd += " --repair"
	}
	if reprice {
		cmd += " --reprice"
	}
	if !now.IsZero() {
		cmd += " --now " + now.UTC().Format(time.RFC3339)
	}
	return "to check the rest, run " + cmd
}

func (c *cli) verify(ctx context.Context, o job.VerifyOptions) ([]job.PeriodCheck, error) {
	st, err := openStoreToRead(ctx, c, !o.Repair)
	if err != nil {
		return nil, err
	}
	defer st.close()
	b, err := openBucket(ctx, c)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	j := c.newJob(st, b, nil)
	progress := c.progress()
	o.Progress = func(i, n int, p report.Period) { progress(i, n, "verify", p) }
	defer c.bar.clear()
	return j.Verify(ctx, o)
}

// monthLine is verify's line for one month's statements.
func monthLine(mc monthclose.MonthCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, "month %s  ", mc.Month)
	switch {
	case mc.Status == "" && !mc.Differs():
		b.WriteString("no statement (no period delivered)")
	case !mc.Differs():
		fmt.Fprintf(&b, "ok (%s statement, revision %d, objects checked, equals its periods and adjustments)", mc.Status, mc.Revision)
	default:
		fmt.Fprintf(&b, "%s statement, revision %d: %s", mc.Status, mc.Revision, strings.Join(mc.Problems, "; "))
	}
	if mc.Repaired != "" {
		b.WriteString(" -> repaired: ")
		b.WriteString(mc.Repaired)
	}
	if mc.NotRepairable != "" {
		b.WriteString(" -> NOT repairable: ")
		b.WriteString(mc.NotRepairable)
	}
	return b.String()
}

// verifyLine is verify's line for one period.
func verifyLine(pc job.PeriodCheck) string {
	var b strings.Builder
	b.WriteString(pc.Period.Name())
	b.WriteString("  ")
	switch pc.Status {
	case job.VerifyItemsChanged:
		if d := pc.ItemsNow - pc.ItemsManifest; d > 0 {
			fmt.Fprintf(&b, "late items: %d (manifest %d, now %d)", d, pc.ItemsManifest, pc.ItemsNow)
		} else {
			fmt.Fprintf(&b, "items changed (manifest %d, now %d)", pc.ItemsManifest, pc.ItemsNow)
		}
	case job.VerifyOK:
		fmt.Fprintf(&b, "ok (revision %d, %d items, objects checked)", pc.Revision, pc.ItemsNow)
	default:
		b.WriteString(pc.Status)
	}
	for i, pr := range pc.Problems {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(pc.Problems)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(pr.String())
	}
	if pc.Repaired != "" {
		b.WriteString(" -> repaired: ")
		b.WriteString(pc.Repaired)
	}
	if pc.NotRepairable != "" {
		b.WriteString(" -> NOT repairable: ")
		b.WriteString(pc.NotRepairable)
	}
	return b.String()
}

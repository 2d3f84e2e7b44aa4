package main

import (
	"context"
	"fmt"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	lookups "github.com/reportjob/reportjob/internal/lookup"
	"github.com/reportjob/reportjob/internal/report"
)

// The lines of `transactions --id --json`, before the summary: a billed
// line, and a reject that carries the id.
type billedFact struct {
	Kind string `json:"kind"` // "billed"
	lineRow
	AgencyObject string `json:"agency_object,omitempty"`
}

// noLinesFact is a period that may bill the id (the index's billing period,
// or one of the range) and delivered no line items.
type noLinesFact struct {
	Kind     string `json:"kind"` // "no_line_items"
	Period   string `json:"period"`
	Revision int    `json:"revision"`
	Note     string `json:"note"`
}

type droppedFact struct {
	Kind   string `json:"kind"` // "dropped"
	Period string `json:"period"`
	Note   string `json:"note"`
}

type rejectedFact struct {
	Kind string `json:"kind"` // "rejected"
	rejectRow
}

// days formats d in days when it is a whole number of them ("70d").
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return report.FormatDuration(d)
}

// transactionByID is `transactions --id TX`: the dedupe index says which
// period billed it (one read); that period's files say how. With
// --from/--to, the range's periods are searched instead.
func (c *cli) transactionByID(ctx context.Context, id string, lf *lookupFlags) error {
	started := time.Now()
	sum := lookupSummary{Command: "transactions", Job: c.cfg.JobName, ID: id, From: lf.from.String(), To: lf.to.String()}
	ranged := !lf.from.t.IsZero() || !lf.to.t.IsZero()
	r, st, _, err := c.openLookup(ctx, lf.from.t, lf.to.t)
	if err != nil {
		return err
	}
	defer st.close()
	var idx lookups.Claims = st.Index
	if c.cfg.Report.DedupeWindow == 0 {
		idx = nil // no index is kept
	}
	from, to := time.Time{}, time.Time{}
	if ranged && len(r.Periods) > 0 {
		from, to = r.Periods[0].Start, r.Periods[len(r.Periods)-1].End
	}
	h, err := r.ByID(ctx, idx, c.cfg.JobName, id, from, to)
	if err != nil {
		return err
	}
	inIndex := h.Claim != nil
	sum.InIndex = &inIndex
	w := c.stdout
	if !*lf.asJSON {
		fmt.Fprintf(w, "transaction %s\n", id)
		switch {
		case h.Claim != nil:
			fmt.Fprintf(w, "dedupe index: billed by period %s (claim kept until %s)\n",
				h.Claim.Period.UTC().Format("20060102T1504Z"), h.Claim.Expires.UTC().Format(time.RFC3339))
		case idx == nil:
			fmt.Fprintf(w, "dedupe index: not kept (report.dedupe_window is 0)\n")
		default:
			fmt.Fprintf(w, "dedupe index: no entry (never billed, or billed longer ago than claims are kept: %s after their period, or after the run that billed them when later)\n",
				days(collect.ClaimRetention(c.cfg.Report.DedupeWindow)))
		}
	}
	for i := range h.Billed {
		l := &h.Billed[i]
		if *lf.asJSON {
			c.printLine(billedFact{Kind: "billed", lineRow: lineJSON(l), AgencyObject: h.AgencyKeys[i]})
			continue
		}
		tx := &l.Tx
		fmt.Fprintf(w, "billed:       period %s revision %d, agency %q, %s %s %s, commission %s (%d bps), recorded %s\n",
			l.Period.Name(), l.Revision, tx.AgencyID, tx.Kind, tx.Currency.Format(tx.Amount), tx.Currency.Code,
			tx.Currency.Format(l.Commission), l.BPS, tx.RecordedAt.UTC().Format(time.RFC3339))
		if h.AgencyKeys[i] != "" {
			fmt.Fprintf(w, "  line in:    %s\n", h.AgencyKeys[i])
		}
		fmt.Fprintf(w, "  line in:    %s\n", l.Key)
	}
	billedNoLines := false
	for _, nl := range h.NoLineItems {
		note := "delivered no line items (report.line_items was false): its lines cannot be searched for the id"
		if h.Claim != nil && nl.Period.Start.Equal(h.Claim.Period) {
			billedNoLines = true
			note = "billed the id (dedupe index) but delivered no line items (report.line_items was false): the line and its amount cannot be shown; the period's summary has the agency totals"
		}
		sum.NoLineItems = append(sum.NoLineItems, nl.Period.Name())
		if *lf.asJSON {
			c.printLine(noLinesFact{Kind: "no_line_items", Period: nl.Period.Name(), Revision: nl.Revision, Note: note})
			continue
		}
		fmt.Fprintf(w, "no lines:     period %s revision %d %s\n", nl.Period.Name(), nl.Revision, note)
	}
	for _, sg := range h.Sightings {
		if sg.Kind != collect.SightingDropped {
			continue
		}
		name := report.Period{Start: sg.Period}.Name()
		note := "an identical copy came in this period and was not billed again (a producer retry)"
		if *lf.asJSON {
			c.printLine(droppedFact{Kind: "dropped", Period: name, Note: note})
			continue
		}
		fmt.Fprintf(w, "dropped:      period %s: %s\n", name, note)
	}
	for _, rj := range h.Rejects {
		if *lf.asJSON {
			c.printLine(rejectedFact{Kind: "rejected", rejectRow: rejectJSON(&rj)})
			continue
		}
		fmt.Fprintf(w, "rejected:     period %s revision %d, item %s / %s: %s: %s\n",
			rj.Period.Name(), rj.Revision, rj.PartitionKey, rj.SortKey, rj.Field, rj.Reason)
		fmt.Fprintf(w, "  line in:    %s line %d\n", rj.Key, rj.Line)
	}
	nb, nr := len(h.Billed), len(h.Rejects)
	nd := 0
	for _, sg := range h.Sightings {
		if sg.Kind == collect.SightingDropped {
			nd++
		}
	}
	switch {
	case ranged:
		sum.Note = fmt.Sprintf("searched %d period(s) of the range", h.Searched)
	case h.Claim != nil || len(h.Sightings) > 0:
		sum.Note = fmt.Sprintf("from the dedupe index: %d period(s) read; it keeps ids %s after their period (or after the run that billed them, when later): search older ones with --from T --to T",
			h.Searched, days(collect.ClaimRetention(c.cfg.Report.DedupeWindow)))
	default:
		sum.Note = "not in the dedupe index: search a range of periods with --from T --to T"
	}
	if len(h.NoLineItems) > 0 && !billedNoLines {
		sum.Note += fmt.Sprintf("; %d period(s) delivered no line items and could not be searched", len(h.NoLineItems))
	}
	if !*lf.asJSON {
		if nb == 0 && nr == 0 && nd == 0 && !billedNoLines {
			fmt.Fprintf(w, "not found in the periods read\n")
		}
		fmt.Fprintf(w, "note:         %s\n", sum.Note)
	}
	sum.Billed, sum.RejectRows, sum.Dropped, sum.PeriodsRead = &nb, &nr, &nd, h.Searched
	sum.Gets, sum.Lists = r.Requests()
	sum.Status = "ok"
	if nb == 0 && nr == 0 && nd == 0 && !billedNoLines {
		sum.Status = "not_found"
	}
	sum.DurationMS = time.Since(started).Milliseconds()
	c.printJSON(sum)
	return nil
}

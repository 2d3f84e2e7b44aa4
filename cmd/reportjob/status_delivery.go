package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/delivery"
)

// statusDelivery is the outbox as status shows it.
type statusDelivery struct {
	Pending int             `json:"pending"`
	Failing []statusFailing `json:"failing"`
	// Since is delivery.since: the months before it are never delivered.
	Since string `json:"since,omitempty"`
	Note  string `json:"note,omitempty"`
}

// statusFailing is a delivery whose last attempt failed.
type statusFailing struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Target      string `json:"target"`
	Attempts    int    `json:"attempts"`
	NextAttempt string `json:"next_attempt"`
	LastError   string `json:"last_error"`
}

func (c *cli) statusDelivery(ctx context.Context, st *store) *statusDelivery {
	d := &statusDelivery{Failing: []statusFailing{}, Since: c.cfg.Delivery.Since}
	pending, err := st.outbox.Pending(ctx, c.cfg.JobName)
	if err != nil {
		d.Note = "outbox unreadable: " + err.Error()
		return d
	}
	d.Pending = len(pending)
	for page := range slices.Chunk(pending, 100) {
		es, err := st.outbox.Get(ctx, c.cfg.JobName, page)
		if err != nil {
			d.Note = "outbox unreadable: " + err.Error()
			return d
		}
		for _, id := range page {
			if e := es[id]; e.Attempts > 0 {
				d.Failing = append(d.Failing, statusFailing{ID: e.ID, Kind: e.Kind, Target: e.Target, Attempts: e.Attempts,
					NextAttempt: e.NextAttempt.UTC().Format(time.RFC3339), LastError: e.LastError})
			}
		}
	}
	return d
}

// maxFailingShown is how many failing deliveries status prints (a month
// of agencies without an address can be thousands): as many as a pass's
// summary lists.
const maxFailingShown = delivery.MaxFailuresListed

func printStatusDelivery(w io.Writer, d *statusDelivery) {
	if d == nil {
		return
	}
	if d.Note != "" {
		fmt.Fprintf(w, "delivery:     %s\n", d.Note)
		return
	}
	since := ""
	if d.Since != "" {
		since = " (months from " + d.Since + " on; earlier ones are never delivered)"
	}
	fmt.Fprintf(w, "delivery:     %d pending, %d failing%s\n", d.Pending, len(d.Failing), since)
	for i, f := range d.Failing {
		if i == maxFailingShown {
			fmt.Fprintf(w, "              ... and %d more (status --json lists them all)\n", len(d.Failing)-i)
			break
		}
		fmt.Fprintf(w, "              %s %s: %d attempt(s), next at %s: %s\n", f.Kind, f.Target, f.Attempts, f.NextAttempt, f.LastError)
	}
}

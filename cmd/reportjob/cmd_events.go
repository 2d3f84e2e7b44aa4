package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/delivery"
)

// eventsSummary is events' JSON summary line.
type eventsSummary struct {
	Command  string           `json:"command"`
	Job      string           `json:"job"`
	Status   string           `json:"status"` // ok | failed | lease_held | bad_usage
	Since    string           `json:"since,omitempty"`
	Delivery *deliverySummary `json:"delivery,omitempty"`
	Error    string           `json:"error,omitempty"`
}

func cmdEvents(ctx context.Context, c *cli, args []string) error {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlags(c, "events")
	var since timeFlag
	fs.Var(&since, "since", "replay: send again every event timestamped at or after T (RFC 3339 or YYYY-MM-DD)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sum := eventsSummary{Command: "events", Job: c.cfg.JobName}
	err := cutShort(ctx, c.events(ctx, &sum, sub, since.t), "run the same command again")
	sum.Status = "ok"
	if err != nil {
		sum.Status, sum.Error = failureStatus(err), err.Error()
	}
	c.printJSON(sum)
	return err
}

func (c *cli) events(ctx context.Context, sum *eventsSummary, sub string, since time.Time) error {
	if sub != "replay" {
		return usagef("events: want `events replay --since T`, not %q", sub)
	}
	if since.IsZero() {
		return usagef("events replay needs --since")
	}
	sum.Since = since.UTC().Format(time.RFC3339)
	if len(c.cfg.Delivery.Webhooks) == 0 {
		return usagef("events replay: delivery.webhooks is empty (docs/delivery.md)")
	}
	res, err := c.deliverOnDemand(ctx, delivery.Options{ReplaySince: since})
	sum.Delivery = summarize(res, nil)
	if err != nil {
		return err
	}
	if res.Failed > 0 {
		return fmt.Errorf("%d event(s) could not be replayed: first: %s: %s", res.Failed, res.Failures[0].Target, res.Failures[0].Error)
	}
	return nil
}

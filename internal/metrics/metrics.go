// Package metrics reports the outcome of one reportjob run to a Prometheus
// Pushgateway, following the Prometheus conventions for batch jobs: one push
// at the end of every run, gauges that describe the last run, and a
// last-success timestamp that only a successful run moves.
//
// Push semantics. The Pushgateway keeps, per grouping key (job, instance),
// the metrics it was last sent:
//
//   - a successful run is pushed with PUT (push.Pusher.Push), which replaces
//     every metric of the grouping key, last_success_timestamp included, so
//     metric names dropped by a newer version of the job do not linger;
//   - a failed run is pushed with POST (push.Pusher.Add), which replaces only
//     the metrics whose names are in the request. The request leaves out
//     reportjob_last_success_timestamp_seconds, so the gateway keeps the
//     previous success's value and an alert on its age keeps firing.
//
// The Pushgateway adds push_time_seconds and push_failure_time_seconds of its
// own; this package does not send them.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"
)

// Metric names. All are gauges: each describes the last run (or the last
// success), not a running total, as the Pushgateway keeps only the last value.
const (
	LastSuccessTimestamp    = "reportjob_last_success_timestamp_seconds"
	LastCompletionTimestamp = "reportjob_last_completion_timestamp_seconds"
	Duration                = "reportjob_duration_seconds"
	PeriodsProcessed        = "reportjob_periods_processed"
	PeriodsRemaining        = "reportjob_periods_remaining"
	Transactions            = "reportjob_transactions"
	Rejects                 = "reportjob_rejects"
	Duplicates              = "reportjob_duplicates"
	Lag                     = "reportjob_lag_seconds"
	LastRunSuccess          = "reportjob_last_run_success"
	Rechecks                = "reportjob_rechecks"
	RechecksRemaining       = "reportjob_rechecks_remaining"
	Restatements            = "reportjob_restatements"
	LateItems               = "reportjob_late_items"
	StatementsIssued        = "reportjob_statements_issued"
	UnlistedAgencies        = "reportjob_statements_unlisted_agencies"
	MonthsClosed            = "reportjob_months_closed"
	PriorPeriodAdjustments  = "reportjob_prior_period_adjustments"
	DeliverySent            = "reportjob_delivery_sent"
	DeliveryFailures        = "reportjob_delivery_failures"
	DeliveryPending         = "reportjob_delivery_pending"
	DeliveryTargetFailing   = "reportjob_delivery_target_failing"
	VerifyPeriods           = "reportjob_verify_periods"
	VerifyDifferences       = "reportjob_verify_differences"
	VerifyTimestamp         = "reportjob_verify_last_timestamp_seconds"
)

// DefaultTimeout bounds a push when Push is given a nil client. A push that
// hangs must not keep a finished batch job (and its lease) alive.
const DefaultTimeout = 30 * time.Second

// ErrInvalidRun is returned, wrapped, when a Run cannot be pushed as given.
var ErrInvalidRun = errors.New("invalid run")

// Run is the outcome of one run of the job.
type Run struct {
	// Job and Instance form the grouping key: Job is the config's job_name
	// (required); Instance is optional and left out of the key when empty.
	Job, Instance string
	// Start and End bound the run; End is the completion timestamp.
	Start, End time.Time
	// Success reports whether the run did everything it set out to do.
	Success bool
	// PeriodsProcessed is the number of periods delivered by this run;
	// PeriodsRemaining the number still due after it (catch-up backlog).
	PeriodsProcessed, PeriodsRemaining int
	// Transactions, Rejects and Duplicates are summed over the run's periods.
	Transactions, Rejects, Duplicates int64
	// LagSeconds is how far the checkpoint is behind the clock at End.
	LagSeconds float64
	// Rechecks done by the run and RechecksRemaining still due after it.
	Rechecks, RechecksRemaining int
	// Restatements are the revisions the run published over earlier ones;
	// LateItems the items those revisions read beyond their predecessors'.
	Restatements int
	LateItems    int64
	// StatementsIssued are the month statements the run published (a
	// draft's new revision or a final one), MonthsClosed those of them
	// final, and PriorPeriodAdjustments the restatements of final months'
	// periods it booked.
	StatementsIssued, MonthsClosed, PriorPeriodAdjustments int
	// UnlistedAgencies are the agencies of the statements the run
	// published that the agency directory lacks.
	UnlistedAgencies int
	// Delivery is the run's delivery pass (nil: delivery is not
	// configured, and its metrics are not pushed).
	Delivery *Delivery
}

// Delivery is what a run's delivery pass (e-mail and events) did.
type Delivery struct {
	// Sent counts e-mails and events delivered, Failures the attempts that
	// failed, Pending the deliveries still to send after the pass.
	Sent, Failures, Pending int
	// Failing are the targets (an agency's e-mail, an endpoint) whose
	// delivery failed in the pass, with their failed attempts so far.
	Failing []FailingTarget
}

// FailingTarget is a target whose delivery failed.
type FailingTarget struct {
	Kind, Target string // "mail" and an agency id, or "event" and an endpoint id
	Attempts     int
}

// Push sends r to the Pushgateway at pushgatewayURL (scheme://host:port, with
// no /metrics/job/... path; credentials in the URL are sent as basic auth and
// never printed). A successful run is sent with PUT, a failed one with POST
// and without the last-success timestamp (see the package doc). A nil client
// means one with DefaultTimeout. ctx bounds the request. Errors name the URL.
//
// Callers skip Push when no URL is configured, and log a Push error rather
// than fail the run with it: the reports are delivered either way. To report
// a run interrupted by SIGTERM, push with a ctx that is not the cancelled one
// (context.WithoutCancel plus a short timeout).
func Push(ctx context.Context, pushgatewayURL string, r Run, client *http.Client) error {
	base, user, pass, err := splitURL(pushgatewayURL)
	if err != nil {
		return err
	}
	if err := r.validate(); err != nil {
		return fmt.Errorf("push metrics to %s: %w", base, err)
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}

	reg := prometheus.NewRegistry()
	gauge := func(name, help string, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		g.Set(v)
		reg.MustRegister(g)
	}
	gauge(LastCompletionTimestamp, "Unix time the last run of the job ended, successful or not.", unixSeconds(r.End))
	gauge(Duration, "Wall-clock duration of the last run in seconds.", r.End.Sub(r.Start).Seconds())
	gauge(LastRunSuccess, "1 if the last run succeeded, 0 if it failed.", boolFloat(r.Success))
	gauge(PeriodsProcessed, "Periods delivered by the last run.", float64(r.PeriodsProcessed))
	gauge(PeriodsRemaining, "Periods still due after the last run (backlog left by max_periods_per_run or a failure).", float64(r.PeriodsRemaining))
	gauge(Transactions, "Transactions billed by the last run.", float64(r.Transactions))
	gauge(Rejects, "Items rejected (unbillable) by the last run.", float64(r.Rejects))
	gauge(Duplicates, "Identical duplicate items dropped by the last run.", float64(r.Duplicates))
	gauge(Lag, "Seconds between the end of the last run and the checkpoint (how far behind the reports are).", r.LagSeconds)
	gauge(Rechecks, "Delivered periods re-read by the last run (report.recheck_after).", float64(r.Rechecks))
	gauge(RechecksRemaining, "Rechecks still due after the last run.", float64(r.RechecksRemaining))
	gauge(Restatements, "Periods the last run restated (published a new revision of) because their items changed.", float64(r.Restatements))
	gauge(LateItems, "Items the last run's restatements found beyond what the replaced revisions had read.", float64(r.LateItems))
	gauge(StatementsIssued, "Month statements (draft revisions and final ones) the last run published.", float64(r.StatementsIssued))
	gauge(MonthsClosed, "Months the last run made final.", float64(r.MonthsClosed))
	gauge(PriorPeriodAdjustments, "Restatements of final months' periods the last run booked as prior-period adjustments.", float64(r.PriorPeriodAdjustments))
	gauge(UnlistedAgencies, "Agencies of the statements the last run published that the agency directory (statements.directory) lacks.", float64(r.UnlistedAgencies))
	if d := r.Delivery; d != nil {
		gauge(DeliverySent, "E-mails and events the last run delivered.", float64(d.Sent))
		gauge(DeliveryFailures, "Delivery attempts (e-mail, events) that failed in the last run; later runs try again.", float64(d.Failures))
		gauge(DeliveryPending, "Deliveries still to send after the last run (failed, or waiting for their next attempt).", float64(d.Pending))
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: DeliveryTargetFailing,
			Help: "Failed attempts so far of a target whose delivery failed in the last run (kind mail: an agency; kind event: an endpoint id)."},
			[]string{"kind", "target"})
		for _, f := range d.Failing {
			v.WithLabelValues(f.Kind, f.Target).Set(float64(f.Attempts))
		}
		reg.MustRegister(v)
	}
	if r.Success {
		gauge(LastSuccessTimestamp, "Unix time the last successful run of the job ended.", unixSeconds(r.End))
	}

	p := push.New(base, r.Job).
		Gatherer(reg).
		Client(client).
		Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	if r.Instance != "" {
		p = p.Grouping("instance", r.Instance)
	}
	if user != "" || pass != "" {
		p = p.BasicAuth(user, pass)
	}
	if r.Success {
		err = p.PushContext(ctx)
	} else {
		err = p.AddContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("push metrics to %s: %w", base, err)
	}
	return nil
}

func (r Run) validate() error {
	switch {
	case r.Job == "":
		return fmt.Errorf("%w: job is empty", ErrInvalidRun)
	case r.End.IsZero():
		return fmt.Errorf("%w: end time is zero", ErrInvalidRun)
	case r.Start.IsZero():
		return fmt.Errorf("%w: start time is zero", ErrInvalidRun)
	case r.End.Before(r.Start):
		return fmt.Errorf("%w: end %s is before start %s", ErrInvalidRun,
			r.End.UTC().Format(time.RFC3339Nano), r.Start.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// splitURL checks the Pushgateway URL and moves any user:password out of it,
// so that error messages (which carry the URL) do not leak it.
func splitURL(raw string) (base, user, pass string, err error) {
	if raw == "" {
		return "", "", "", errors.New("push metrics: pushgateway URL is empty")
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the input; do not echo a possible password.
		return "", "", "", errors.New("push metrics: pushgateway URL does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "", "", fmt.Errorf("push metrics: pushgateway URL %s: scheme %q is not http or https", u.Redacted(), u.Scheme)
	}
	if u.Host == "" {
		return "", "", "", fmt.Errorf("push metrics: pushgateway URL %s has no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", fmt.Errorf("push metrics: pushgateway URL %s must not have a query or fragment", u.Redacted())
	}
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	return u.String(), user, pass, nil
}

func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Verify is the outcome of one `verify` run.
type Verify struct {
	Job string
	End time.Time
	// Periods checked, and Differences: periods that differ from their
	// manifest (before any repair).
	Periods, Differences int
}

// PushVerify sends v to the Pushgateway under the grouping key (job,
// command="verify"), so that it neither replaces nor is replaced by the
// runs' group. It is always a PUT: the group holds only the last verify.
func PushVerify(ctx context.Context, pushgatewayURL string, v Verify, client *http.Client) error {
	base, user, pass, err := splitURL(pushgatewayURL)
	if err != nil {
		return err
	}
	if v.Job == "" || v.End.IsZero() {
		return fmt.Errorf("push metrics to %s: %w: job and end time are required", base, ErrInvalidRun)
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	reg := prometheus.NewRegistry()
	for _, g := range []struct {
		name, help string
		v          float64
	}{
		{VerifyTimestamp, "Unix time the last verify ended.", unixSeconds(v.End)},
		{VerifyPeriods, "Periods the last verify checked.", float64(v.Periods)},
		{VerifyDifferences, "Periods the last verify found different from their manifest (late items, missing, corrupt or unlisted objects, no manifest).", float64(v.Differences)},
	} {
		m := prometheus.NewGauge(prometheus.GaugeOpts{Name: g.name, Help: g.help})
		m.Set(g.v)
		reg.MustRegister(m)
	}
	p := push.New(base, v.Job).Grouping("command", "verify").Gatherer(reg).Client(client).
		Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	if user != "" || pass != "" {
		p = p.BasicAuth(user, pass)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push metrics to %s: %w", base, err)
	}
	return nil
}

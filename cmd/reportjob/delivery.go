package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/delivery"
	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/mail"
	"github.com/reportjob/reportjob/internal/metrics"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/outbox"
	"github.com/reportjob/reportjob/internal/s3sink"
	"github.com/reportjob/reportjob/internal/webhook"
)

// Test knobs: RJTEST_WEBHOOK_TIMEOUT bounds one webhook POST (default
// 10s); RJTEST_DELIVERY_BACKOFF replaces the first retry delay (1m,
// doubled after each failure), so that a test's next run retries at once.
const (
	envTestWebhookTimeout  = "RJTEST_WEBHOOK_TIMEOUT"
	envTestDeliveryBackoff = "RJTEST_DELIVERY_BACKOFF"
)

// deliverySummary is the delivery part of a summary line (omitted when
// delivery is not configured).
type deliverySummary struct {
	Sent     int                `json:"sent"`
	Resent   int                `json:"resent,omitempty"`
	Failed   int                `json:"failed"`
	Pending  int                `json:"pending"`
	Enqueued int                `json:"enqueued"`
	Failures []delivery.Failure `json:"failures,omitempty"`
	Error    string             `json:"error,omitempty"`
	// endpoints are the pass's delivery.Result.EndpointsFailing (metrics).
	endpoints map[string]int
}

func deliveryConfigured(c *cli) bool {
	d := c.cfg.Delivery
	return d.Email.Enabled() || len(d.Webhooks) > 0
}

// objects reads sink objects whole for the attachments.
type objects struct{ b *bucket }

func (o objects) ReadAll(ctx context.Context, key string) ([]byte, error) {
	data, _, err := o.b.ReadAll(ctx, key, 64<<20)
	return data, err
}

// dirAdapter is the agency directory as package delivery reads it.
type dirAdapter struct{ d *directory.Directory }

func (a dirAdapter) Lookup(id string) (delivery.Recipient, bool) {
	e, ok := a.d.Lookup(id)
	return delivery.Recipient{LegalName: e.LegalName, Emails: e.Emails, Locale: e.Locale, TermsDays: e.PaymentTermsDays, HasTerms: e.HasTerms}, ok
}

// loadDirectory reads statements.directory at send time (nil when none is
// configured).
func (c *cli) loadDirectory(ctx context.Context) (*directory.Directory, error) {
	src := c.cfg.Statements.Directory
	if src == "" {
		return nil, nil
	}
	var get directory.Getter
	if strings.HasPrefix(src, "s3://") {
		s3c := c.cfg.Sink.S3
		client, err := s3sink.NewClient(ctx, s3sink.ClientConfig{Region: s3c.Region, Endpoint: s3c.Endpoint, PathStyle: s3c.PathStyle, Logger: c.log})
		if err != nil {
			return nil, err
		}
		get = func(ctx context.Context, bucket, key string) ([]byte, error) {
			return s3sink.GetObjectBytes(ctx, client, bucket, key, directory.MaxSize)
		}
	}
	return directory.Load(ctx, src, get)
}

// newPass wires a delivery pass; dir holds what the statement reader
// downloads.
func (c *cli) newPass(ctx context.Context, st *store, b *bucket, j *job.Job, dir string) (*delivery.Pass, error) {
	cfg := c.cfg
	em := cfg.Delivery.Email
	p := &delivery.Pass{Job: cfg.JobName, Since: cfg.Delivery.Since, Email: em, Webhooks: cfg.Delivery.Webhooks, Statements: j.Reader(dir),
		Objects: objects{b}, Outbox: st.outbox, Getenv: func(k string) string { return getenv(c.env, k) },
		Issuer: cfg.Statements.Issuer.LegalName, Contact: cfg.Statements.Issuer.Contact,
		Instructions: cfg.Statements.Issuer.PaymentInstructions, TermsDays: cfg.Statements.Issuer.PaymentTermsDays, Clock: j.Now, Log: c.log}
	if em.Enabled() {
		pw, err := em.Password(func(k string) string { return getenv(c.env, k) })
		if err != nil {
			return nil, usagef("%v", err)
		}
		p.Mailer = &mail.Client{Host: em.Host, Port: em.Port, TLS: em.TLS, Username: em.Username, Password: pw}
		d, err := c.loadDirectory(ctx)
		if err != nil {
			// The statements are sent once it reads again: every mail
			// fails now with the reason, and stays pending.
			c.log.Warn("agency directory unreadable: no statement is e-mailed in this pass", "err", err)
			p.DirectoryErr = err
		}
		if d != nil {
			p.Directory = dirAdapter{d}
		}
	}
	timeout := 10 * time.Second
	if v := getenv(c.env, envTestWebhookTimeout); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			timeout = d
		}
	}
	if v := getenv(c.env, envTestDeliveryBackoff); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			p.Backoff = func(n int) time.Duration { return d * time.Duration(outbox.Backoff(n)/time.Minute) }
		}
	}
	p.Poster = &webhook.Sender{Client: webhookClient(timeout), UserAgent: "reportjob/" + version}
	return p, nil
}

// deliverOnDemand opens the store, the sink and the job for a command that
// only delivers (`statement --send/--resend`, `events replay`) and runs
// deliver with o.
func (c *cli) deliverOnDemand(ctx context.Context, o delivery.Options) (delivery.Result, error) {
	st, err := openStore(ctx, c)
	if err != nil {
		return delivery.Result{}, err
	}
	defer st.close()
	b, err := openBucket(ctx, c)
	if err != nil {
		return delivery.Result{}, err
	}
	defer b.Close()
	return c.deliver(ctx, st, b, c.newJob(st, b, nil), o)
}

// deliver runs a delivery pass under the job's lease. Its failures never
// change what the billing record says: the caller reports them.
func (c *cli) deliver(ctx context.Context, st *store, b *bucket, j *job.Job, o delivery.Options) (delivery.Result, error) {
	dir, err := j.Scratch("delivery")
	if err != nil {
		return delivery.Result{}, err
	}
	defer dir.Close()
	p, err := c.newPass(ctx, st, b, j, dir.Path)
	if err != nil {
		return delivery.Result{}, err
	}
	var res delivery.Result
	err = j.Hold(ctx, func(ctx context.Context, h job.Holder) error {
		var err error
		res, err = p.Run(ctx, h, o)
		return err
	})
	return res, err
}

func summarize(res delivery.Result, err error) *deliverySummary {
	s := &deliverySummary{Sent: res.MailSent + res.EventsSent, Resent: res.Resent, Failed: res.Failed, Pending: res.Pending,
		Enqueued: res.Enqueued, Failures: res.Failures, endpoints: res.EndpointsFailing}
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

func deliveryMetrics(s *deliverySummary) *metrics.Delivery {
	if s == nil {
		return nil
	}
	d := &metrics.Delivery{Sent: s.Sent, Failures: s.Failed, Pending: s.Pending}
	// One series per endpoint that failed, and per agency among the
	// failures listed (at most delivery.MaxFailuresListed): never one per
	// agency of a marketplace.
	seen := map[[2]string]bool{}
	for _, f := range s.Failures {
		if k := [2]string{f.Kind, f.Target}; f.Kind == outbox.KindMail && !seen[k] {
			seen[k] = true
			d.Failing = append(d.Failing, metrics.FailingTarget{Kind: f.Kind, Target: f.Target, Attempts: f.Attempts})
		}
	}
	for _, ep := range slices.Sorted(maps.Keys(s.endpoints)) {
		d.Failing = append(d.Failing, metrics.FailingTarget{Kind: outbox.KindEvent, Target: ep, Attempts: s.endpoints[ep]})
	}
	return d
}

// statementNumber is the agency's statement number recorded in the month
// manifest ("" when it records none).
func statementNumber(m *monthclose.Manifest, agency string) string {
	for _, e := range m.Agencies {
		if e.AgencyID == agency {
			return e.Number
		}
	}
	return ""
}

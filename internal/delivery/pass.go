package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/fence"
	"github.com/reportjob/reportjob/internal/mail"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/outbox"
	"github.com/reportjob/reportjob/internal/webhook"
)

// Statements reads the published statements (monthclose.Closer).
type Statements interface {
	// Months lists the months with a statement, ascending.
	Months(ctx context.Context) ([]string, error)
	// Read reads a month's manifest and statement rows.
	Read(ctx context.Context, month string) (*monthclose.Statement, error)
}

// Objects reads a published object whole (the sink).
type Objects interface {
	ReadAll(ctx context.Context, key string) ([]byte, error)
}

// Recipient is an agency as the directory knows it at send time.
type Recipient struct {
	LegalName string
	Emails    []string
	Locale    string
	// TermsDays are the agency's own payment terms when HasTerms.
	TermsDays int
	HasTerms  bool
}

// Directory finds an agency's billing addresses (nil: no directory, so no
// agency has one).
type Directory interface {
	Lookup(agencyID string) (Recipient, bool)
}

// Mailer sends one message (mail.Client): nil only when it was accepted.
type Mailer interface {
	Send(ctx context.Context, m *mail.Message) error
}

// Poster posts one signed event (webhook.Sender).
type Poster interface {
	Send(ctx context.Context, url string, key []byte, id string, body []byte) error
}

// Holder is the lease the pass writes under (job.Holder).
type Holder interface {
	Lease() checkpoint.Lease
	Check() error
}

// Pass is one delivery pass of a job.
type Pass struct {
	Job string
	// Since is the first statement month delivered (delivery.since): the
	// months before it are not derived, so nothing of them is enqueued
	// or sent. "" derives every month.
	Since      string
	Email      config.Email
	Webhooks   []config.Webhook
	Statements Statements
	Objects    Objects
	Directory  Directory
	// DirectoryErr is why the directory could not be read, when it could
	// not: every e-mail fails with it (and stays pending) instead of
	// with ErrNoAddress.
	DirectoryErr error
	Outbox       outbox.Store
	Mailer       Mailer
	Poster       Poster
	// Getenv looks up the endpoints' secrets (secret_env).
	Getenv func(string) string
	// Issuer names the sender in the wording ({issuer}); Contact and
	// Instructions fill {contact} and {instructions}: the configuration's,
	// for a month whose manifest recorded none.
	Issuer, Contact, Instructions string
	// TermsDays are the issuer's payment terms: a final statement is due
	// that many days after its close (an agency's own terms win).
	TermsDays int
	// Backoff is the wait before the next attempt after n failed ones
	// (nil: outbox.Backoff).
	Backoff func(n int) time.Duration
	// Clock is the lease's wall clock (default time.Now).
	Clock func() time.Time
	Log   *slog.Logger
}

func (p *Pass) now() time.Time {
	if p.Clock == nil {
		return time.Now().UTC()
	}
	return p.Clock().UTC()
}

// Options select what a pass sends.
type Options struct {
	// Month and Agency, when set, limit the e-mails sent (statement --send);
	// events are not sent then.
	Month, Agency string
	// MailOnly sends e-mail only (statement --send).
	MailOnly bool
	// Resend sends the month's statements again on purpose (statement
	// --resend): only those sent before, each as a new message.
	Resend bool
	// ReplaySince, when set, sends every event at or after it again
	// (events replay), with the same ids.
	ReplaySince time.Time
}

// Failure is one delivery that failed in this pass.
type Failure struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Target   string    `json:"target"`
	Attempts int       `json:"attempts"`
	Next     time.Time `json:"next_attempt"`
	Error    string    `json:"error"`
}

// MaxFailuresListed is how many failures a Result lists: a month of
// 100,000 agencies whose endpoint is down fails 100,000 times in one pass.
const MaxFailuresListed = 20

// Result is what a pass did.
type Result struct {
	Enqueued   int `json:"enqueued"`
	MailSent   int `json:"mail_sent"`
	EventsSent int `json:"events_sent"`
	Resent     int `json:"resent"`
	// Failed counts the deliveries that failed; Failures lists the first
	// MaxFailuresListed of them.
	Failed   int       `json:"failed"`
	Failures []Failure `json:"failures,omitempty"`
	// EndpointsFailing are the failed attempts so far of each endpoint
	// that failed in the pass (its most failed event), by endpoint id:
	// few, whatever the number of events.
	EndpointsFailing map[string]int `json:"-"`
	// Pending is what stays to send after the pass (failed, or not due
	// yet).
	Pending int `json:"pending"`
}

// ErrNoAddress is a statement whose agency has no e-mail address in the
// directory.
var ErrNoAddress = errors.New("no billing e-mail address in the directory")

// Run enqueues what is due and sends it. It returns an error only when the
// pass itself could not work (the outbox or the record unreadable, the
// lease lost); a delivery that fails is a Failure, tried again by later
// runs.
func (p *Pass) Run(ctx context.Context, h Holder, o Options) (Result, error) {
	var res Result
	n, deriveErr := p.enqueueDue(ctx, h)
	res.Enqueued = n
	if errors.Is(deriveErr, checkpoint.ErrLeaseLost) || h.Check() != nil {
		return res, deriveErr
	}
	var err error
	switch {
	case o.Resend || !o.ReplaySince.IsZero():
		err = p.sendAgain(ctx, h, o, &res)
	default:
		err = p.sendPending(ctx, h, o, &res)
	}
	if err != nil {
		return res, err
	}
	pending, err := p.Outbox.Pending(ctx, p.Job)
	if err != nil {
		return res, err
	}
	res.Pending = len(pending)
	return res, deriveErr
}

// sendPending sends what is pending and due (of o.Month and o.Agency,
// when given: then whether it is due is not asked). The pending ids are
// read first, then their entries sendPage at a time, so that a month of
// 100,000 agencies is never held at once.
func (p *Pass) sendPending(ctx context.Context, h Holder, o Options, res *Result) error {
	ids, err := p.Outbox.Pending(ctx, p.Job)
	if err != nil {
		return err
	}
	if o.MailOnly {
		prefix := "mail/"
		if o.Month != "" {
			prefix += o.Month + "/"
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return !strings.HasPrefix(id, prefix) })
	}
	now := p.now()
	for page := range slices.Chunk(ids, sendPage) {
		es, err := p.Outbox.Get(ctx, p.Job, page)
		if err != nil {
			return fmt.Errorf("deliveries: %w", err)
		}
		for _, id := range page {
			e, ok := es[id]
			switch {
			case !ok || e.Kind == outbox.KindMark && e.Sent.IsZero():
			case !e.Sent.IsZero():
				// Sent, yet still in the pending index: a store written
				// without transactions (dynalite) whose process died
				// between the entry and its index, or an earlier binary.
				// Recording it as it is takes it out, so that it is no
				// longer counted pending.
				if err := p.Outbox.Record(ctx, p.Job, h.Lease(), p.now(), e); err != nil {
					return fmt.Errorf("deliveries: %w", err)
				}
				p.logger().Info("a sent delivery was still indexed as pending; index corrected", "id", e.ID)
			case e.Kind == outbox.KindMail && o.Month != "" && !strings.HasPrefix(e.ID, "mail/"+o.Month+"/"):
			case e.Kind == outbox.KindMail && o.Agency != "" && e.Target != o.Agency:
			case !e.Due(now) && o.Month == "" && o.Agency == "":
				// not due yet: a later run tries it
			default:
				if err := p.send(ctx, h, e, res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sendAgain sends on purpose what was sent before: the latest revision of
// o.Month's e-mails (statement --resend), or every event at or after
// o.ReplaySince (events replay).
func (p *Pass) sendAgain(ctx context.Context, h Holder, o Options, res *Result) error {
	var todo []outbox.Entry
	if o.Resend {
		prefix := "mail/" + o.Month + "/"
		all, err := p.Outbox.Since(ctx, p.Job, time.Time{})
		if err != nil {
			return err
		}
		for _, e := range all {
			if e.Kind == outbox.KindMail && strings.HasPrefix(e.ID, prefix) && !e.Sent.IsZero() && (o.Agency == "" || e.Target == o.Agency) {
				todo = append(todo, e)
			}
		}
		todo = latestRevisions(todo)
	} else {
		all, err := p.Outbox.Since(ctx, p.Job, o.ReplaySince)
		if err != nil {
			return err
		}
		for _, e := range all {
			if e.Kind == outbox.KindEvent {
				todo = append(todo, e)
			}
		}
	}
	for _, e := range todo {
		if err := p.send(ctx, h, e, res); err != nil {
			return err
		}
	}
	return nil
}

// send sends e and records the outcome: a failure is counted in res and
// tried again by a later run; the error is the pass's own (the lease
// lost, the outbox unwritable).
func (p *Pass) send(ctx context.Context, h Holder, e outbox.Entry, res *Result) error {
	if err := h.Check(); err != nil {
		return fmt.Errorf("deliveries: %w", err)
	}
	resend := !e.Sent.IsZero()
	crashBeforeSend()
	var serr error
	switch e.Kind {
	case outbox.KindMail:
		serr = p.sendMail(ctx, e, resend)
	case outbox.KindEvent:
		serr = p.sendEvent(ctx, e)
	}
	if ferr := fence.Check(ctx); ferr != nil {
		return fmt.Errorf("deliveries: %w", ferr)
	}
	now := p.now()
	if serr != nil {
		if !resend {
			e = e.Failed(now, serr)
			if p.Backoff != nil {
				e.NextAttempt = now.Add(p.Backoff(e.Attempts))
			}
		}
		res.Failed++
		if len(res.Failures) < MaxFailuresListed {
			res.Failures = append(res.Failures, Failure{ID: e.ID, Kind: e.Kind, Target: e.Target, Attempts: e.Attempts, Next: e.NextAttempt, Error: serr.Error()})
		}
		if e.Kind == outbox.KindEvent {
			if res.EndpointsFailing == nil {
				res.EndpointsFailing = map[string]int{}
			}
			res.EndpointsFailing[e.Target] = max(res.EndpointsFailing[e.Target], e.Attempts)
		}
		p.logger().Warn("delivery failed; a later run tries again", "id", e.ID, "target", e.Target, "attempts", e.Attempts, "err", serr)
		if !resend {
			if err := p.Outbox.Record(ctx, p.Job, h.Lease(), now, e); err != nil {
				return fmt.Errorf("deliveries: %w", err)
			}
		}
		return nil
	}
	crashAfterSend(e.ID)
	if err := p.Outbox.Record(ctx, p.Job, h.Lease(), now, e.Delivered(now)); err != nil {
		return fmt.Errorf("deliveries: sent %s, then: %w", e.ID, err)
	}
	switch {
	case resend:
		res.Resent++
	case e.Kind == outbox.KindMail:
		res.MailSent++
	default:
		res.EventsSent++
	}
	return nil
}

// sendPage is how many pending deliveries are read whole at a time.
const sendPage = 100

// latestRevisions keeps, per agency, the mail of the latest statement
// revision.
func latestRevisions(es []outbox.Entry) []outbox.Entry {
	best := map[string]outbox.Entry{}
	var order []string
	for _, e := range es {
		b, ok := best[e.Target]
		if !ok {
			order = append(order, e.Target)
		}
		if !ok || revisionOf(e.ID) > revisionOf(b.ID) {
			best[e.Target] = e
		}
	}
	slices.Sort(order)
	var out []outbox.Entry
	for _, a := range order {
		out = append(out, best[a])
	}
	return out
}

func revisionOf(id string) int {
	var r int
	fmt.Sscanf(id[strings.LastIndexByte(id, '/')+1:], "%d", &r)
	return r
}

func (p *Pass) logger() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// sendEvent posts an event entry to its endpoint.
func (p *Pass) sendEvent(ctx context.Context, e outbox.Entry) error {
	parts := strings.Split(e.ID, "/")
	if len(parts) != 3 {
		return fmt.Errorf("event entry %q: bad id", e.ID)
	}
	i := slices.IndexFunc(p.Webhooks, func(w config.Webhook) bool { return w.ID == e.Target })
	if i < 0 {
		return fmt.Errorf("endpoint %s is no longer in delivery.webhooks", e.Target)
	}
	ep := p.Webhooks[i]
	secret := ""
	if p.Getenv != nil {
		secret = p.Getenv(ep.SecretEnv)
	}
	if secret == "" {
		return fmt.Errorf("endpoint %s: the environment variable %s is not set", ep.URL, ep.SecretEnv)
	}
	key, err := webhook.Key(secret)
	if err != nil {
		return fmt.Errorf("endpoint %s (%s): %w", ep.URL, ep.SecretEnv, err)
	}
	return p.Poster.Send(ctx, ep.URL, key, parts[1], e.Payload)
}

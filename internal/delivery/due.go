// Package delivery sends the news of the record: the e-mail of each final
// statement to its agency, and signed events to the configured endpoints.
//
// What is due is derived from the published record, not from a step that
// could be skipped: every pass reads the month manifests (the commit
// records of the statements; a final one never changes) of the months not
// yet marked done, and enqueues into the outbox (package outbox) every
// delivery they imply that the outbox does not hold yet. Only then does it
// mark a final month done. A pass then sends what is pending and due,
// recording each success right after the server accepted it. So a crash
// at any point loses nothing: what was not enqueued is derived again, what
// was enqueued and not recorded as sent is sent again. The one duplicate
// possible is a send the server accepted whose record was not written (a
// crash in between): it carries the same Message-ID or event id.
package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/outbox"
	"github.com/reportjob/reportjob/internal/report"
)

// Event types.
const (
	PeriodDelivered = "period.delivered"
	PeriodRestated  = "period.restated"
	StatementFinal  = "statement.final"
	MonthClosed     = "month.closed"
)

// Event is an event's body as sent (Standard Webhooks' payload shape).
type Event struct {
	Type string `json:"type"`
	// Timestamp is when what it announces was published (RFC 3339 UTC).
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// EventID is the id of the event of type typ about subject (its
// webhook-id, the same on every attempt and replay): "evt_" and 24 hex
// digits of a hash of (job, type, subject).
func EventID(job, typ, subject string) string {
	h := sha256.Sum256([]byte("reportjob.event/1\x00" + job + "\x00" + typ + "\x00" + subject))
	return "evt_" + hex.EncodeToString(h[:12])
}

// PeriodData is the data of period.delivered and period.restated.
type PeriodData struct {
	Job         string    `json:"job"`
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Revision    int       `json:"revision"`
	Manifest    string    `json:"manifest"`
	Digest      string    `json:"digest,omitempty"`
	// Month is the statement month that counts it (restated: where its
	// adjustment is booked).
	Month string `json:"month"`
	// Restated only: the revision it replaced, why, and the difference of
	// commission per currency booked as a prior-period adjustment (empty
	// when the period's own month is still draft: the next draft shows it).
	FromRevision int                         `json:"from_revision,omitempty"`
	Reason       string                      `json:"reason,omitempty"`
	Adjustments  []monthclose.CurrencyAmount `json:"adjustments,omitempty"`
}

// StatementData is the data of statement.final.
type StatementData struct {
	Job               string            `json:"job"`
	Month             string            `json:"month"`
	AgencyID          string            `json:"agency_id"`
	Number            string            `json:"number,omitempty"`
	StatementRevision int               `json:"statement_revision"`
	Totals            []AgencyTotal     `json:"totals"`
	Objects           []report.FileInfo `json:"objects"`
}

// AgencyTotal is one currency of an agency's statement.
type AgencyTotal struct {
	Currency               string `json:"currency"`
	PurchaseCount          int64  `json:"purchase_count"`
	RefundCount            int64  `json:"refund_count"`
	Net                    string `json:"net_amount"`
	Commission             string `json:"commission_amount"`
	PriorPeriodAdjustments string `json:"prior_period_adjustments"`
	CommissionDue          string `json:"commission_due"`
}

// MonthData is the data of month.closed.
type MonthData struct {
	Job               string             `json:"job"`
	Month             string             `json:"month"`
	Timezone          string             `json:"timezone"`
	StatementRevision int                `json:"statement_revision"`
	Reason            string             `json:"reason"`
	Agencies          int                `json:"agencies"`
	Totals            []monthclose.Total `json:"totals"`
	Manifest          string             `json:"manifest"`
}

// MailData is what a mail entry needs to be sent.
type MailData struct {
	Month             string `json:"month"`
	AgencyID          string `json:"agency_id"`
	StatementRevision int    `json:"statement_revision"`
	Final             bool   `json:"final"`
	// Issued is when the statement revision was published (a final's
	// close).
	Issued time.Time         `json:"issued"`
	Number string            `json:"number,omitempty"`
	Files  []report.FileInfo `json:"files"`
	Totals []AgencyTotal     `json:"totals"`
	// Due is the due date the statement prints (YYYY-MM-DD), and Issuer,
	// Contact and Instructions its issuer's wording, as the month
	// manifest recorded them ("" in a month published before statements
	// were documents: the configuration's are used).
	Due          string `json:"due,omitempty"`
	Issuer       string `json:"issuer,omitempty"`
	Contact      string `json:"contact,omitempty"`
	Instructions string `json:"instructions,omitempty"`
}

// MailID is the outbox id of the e-mail of an agency's statement revision.
func MailID(month, agency string, revision int) string {
	return fmt.Sprintf("mail/%s/%s/%d", month, agency, revision)
}

func markID(month string) string { return "mark/month/" + month }

// derive calls emit with each delivery month statement s implies, in
// turn (a month of 100,000 agencies implies as many e-mails and events
// per endpoint: they are never all held at once).
func (p *Pass) derive(s *monthclose.Statement, emit func(outbox.Entry) error) error {
	m := s.Manifest
	at := m.GeneratedAt.UTC()
	event := func(typ, subject string, data any) error {
		if !slices.ContainsFunc(p.Webhooks, func(ep config.Webhook) bool { return ep.Wants(typ) }) {
			return nil
		}
		body, err := json.Marshal(Event{Type: typ, Timestamp: at, Data: data})
		if err != nil {
			return err
		}
		id := EventID(p.Job, typ, subject)
		for _, ep := range p.Webhooks {
			if ep.Wants(typ) {
				if err := emit(outbox.Entry{ID: "event/" + id + "/" + ep.ID, Kind: outbox.KindEvent, Target: ep.ID, At: at, Payload: body}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, pe := range m.Periods {
		d := PeriodData{Job: p.Job, PeriodStart: pe.Start.UTC(), PeriodEnd: pe.End.UTC(), Revision: pe.Revision, Manifest: pe.Key, Digest: pe.Digest, Month: m.Month}
		if err := event(PeriodDelivered, pe.Start.UTC().Format(time.RFC3339), d); err != nil {
			return err
		}
		if pe.Revision > 1 {
			if err := event(PeriodRestated, fmt.Sprintf("%s#%d", pe.Start.UTC().Format(time.RFC3339), pe.Revision), d); err != nil {
				return err
			}
		}
	}
	for _, a := range m.Adjustments {
		d := PeriodData{Job: p.Job, PeriodStart: a.PeriodStart.UTC(), PeriodEnd: a.PeriodEnd.UTC(), Revision: a.ToRevision, Manifest: a.Key,
			Digest: a.Digest, Month: m.Month, FromRevision: a.FromRevision, Reason: a.Reason, Adjustments: a.Commission}
		if err := event(PeriodRestated, fmt.Sprintf("%s#%d", a.PeriodStart.UTC().Format(time.RFC3339), a.ToRevision), d); err != nil {
			return err
		}
	}
	agencies := agencyTotals(s)
	issued := at
	if m.Final() && !m.ClosesAt.IsZero() {
		issued = m.ClosesAt.UTC() // a final statement is issued at its close
	}
	if m.Final() {
		for _, ag := range agencies {
			d := StatementData{Job: p.Job, Month: m.Month, AgencyID: ag.id, Number: p.number(m, ag.id), StatementRevision: ag.revision,
				Totals: ag.totals, Objects: agencyFiles(m, ag.id)}
			if err := event(StatementFinal, m.Month+"/"+ag.id, d); err != nil {
				return err
			}
		}
		d := MonthData{Job: p.Job, Month: m.Month, Timezone: m.Timezone, StatementRevision: m.StatementRevision, Reason: m.Reason,
			Agencies: len(agencies), Totals: m.Totals, Manifest: report.MonthManifestKey(m.Month)}
		if err := event(MonthClosed, m.Month, d); err != nil {
			return err
		}
	}
	if p.Email.Enabled() && (m.Final() || p.Email.Drafts) {
		for _, ag := range agencies {
			d := MailData{Month: m.Month, AgencyID: ag.id, StatementRevision: ag.revision, Final: m.Final(), Number: p.number(m, ag.id), Issued: issued,
				Files: attachments(agencyFiles(m, ag.id), p.Email.Attach), Totals: ag.totals}
			document(m, ag.id, &d)
			body, err := json.Marshal(d)
			if err != nil {
				return err
			}
			if err := emit(outbox.Entry{ID: MailID(m.Month, ag.id, ag.revision), Kind: outbox.KindMail, Target: ag.id, At: at, Payload: body}); err != nil {
				return err
			}
		}
	}
	return nil
}

// number is the statement number of agency in m ("" in a month published
// before numbers).
func (p *Pass) number(m *monthclose.Manifest, agency string) string {
	for _, e := range m.Agencies {
		if e.AgencyID == agency {
			return e.Number
		}
	}
	return ""
}

// document fills d's dates and issuer from m's document record, when m
// has one: the e-mail says what the statement prints.
func document(m *monthclose.Manifest, agency string, d *MailData) {
	doc := m.Document
	if doc == nil {
		return
	}
	d.Issuer, d.Contact, d.Instructions = doc.Issuer.LegalName, doc.Issuer.Contact, doc.PaymentInstructions
	issued, err := time.Parse(time.DateOnly, doc.IssueDate)
	if err != nil {
		return
	}
	terms := doc.PaymentTermsDays
	for _, e := range m.Agencies {
		if e.AgencyID == agency && e.PaymentTermsDays > 0 {
			terms = e.PaymentTermsDays
		}
	}
	d.Due = issued.AddDate(0, 0, terms).Format(time.DateOnly)
}

type agencyStatement struct {
	id       string
	revision int
	totals   []AgencyTotal
}

// agencyTotals lists the agencies of s (in id order) with their statement
// revision and totals.
func agencyTotals(s *monthclose.Statement) []agencyStatement {
	byID := map[string]*agencyStatement{}
	var ids []string
	for _, r := range s.Rows {
		a := byID[r.AgencyID]
		if a == nil {
			a = &agencyStatement{id: r.AgencyID, revision: int(r.StatementRevision)}
			byID[r.AgencyID] = a
			ids = append(ids, r.AgencyID)
		}
		c := r.Currency
		a.totals = append(a.totals, AgencyTotal{Currency: c.Code, PurchaseCount: r.PurchaseCount, RefundCount: r.RefundCount,
			Net: c.FormatTotal(r.Net), Commission: c.FormatTotal(r.Commission), PriorPeriodAdjustments: c.FormatTotal(r.PriorPeriodAdjustments),
			CommissionDue: c.FormatTotal(r.CommissionDue)})
	}
	for _, e := range s.Manifest.Agencies {
		if a := byID[e.AgencyID]; a != nil {
			a.revision = e.Revision
		}
	}
	slices.Sort(ids)
	out := make([]agencyStatement, len(ids))
	for i, id := range ids {
		out[i] = *byID[id]
	}
	return out
}

// agencyFiles are the file infos of agency's statement files in m.
func agencyFiles(m *monthclose.Manifest, agency string) []report.FileInfo {
	keys := monthclose.AgencyFiles(m, agency)
	var out []report.FileInfo
	for _, f := range m.Files {
		if slices.Contains(keys, f.Key) {
			out = append(out, f)
		}
	}
	return out
}

// attachments keeps the files of the formats attach lists, in its order.
func attachments(files []report.FileInfo, attach []string) []report.FileInfo {
	var out []report.FileInfo
	for _, format := range attach {
		for _, f := range files {
			if len(f.Key) > len(format) && f.Key[len(f.Key)-len(format)-1:] == "."+format {
				out = append(out, f)
			}
		}
	}
	return out
}

// enqueueDue derives the deliveries of every month not marked done (from
// Since on) and enqueues those the outbox lacks; a final month is then
// marked done.
func (p *Pass) enqueueDue(ctx context.Context, h Holder) (int, error) {
	months, err := p.Statements.Months(ctx)
	if err != nil {
		return 0, fmt.Errorf("deliveries: list months: %w", err)
	}
	months = slices.DeleteFunc(months, p.before)
	var marks []string
	for _, m := range months {
		marks = append(marks, markID(m))
	}
	done, err := p.Outbox.Get(ctx, p.Job, marks)
	if err != nil {
		return 0, fmt.Errorf("deliveries: %w", err)
	}
	added := 0
	var errs []error
	for _, m := range months {
		if _, ok := done[markID(m)]; ok {
			continue
		}
		n, err := p.enqueueMonth(ctx, h, m)
		added += n
		if err != nil {
			// One month that cannot be read keeps no other from its
			// deliveries: it is derived again by the next pass.
			errs = append(errs, err)
		}
	}
	return added, errors.Join(errs...)
}

// before reports whether month m comes before Since: it is never
// delivered. (Months are YYYY-MM: their order is the strings'.)
func (p *Pass) before(m string) bool { return p.Since != "" && m < p.Since }

// enqueuePage is how many deliveries are enqueued at a time.
const enqueuePage = 1000

// enqueueMonth enqueues the deliveries of month m, and marks a final one
// done.
func (p *Pass) enqueueMonth(ctx context.Context, h Holder, m string) (int, error) {
	s, err := p.Statements.Read(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("deliveries: read statements of %s: %w", m, err)
	}
	now := p.now()
	n := 0
	var batch []outbox.Entry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		k, err := p.Outbox.Enqueue(ctx, p.Job, h.Lease(), now, batch)
		n += k
		batch = batch[:0]
		return err
	}
	err = p.derive(s, func(e outbox.Entry) error {
		if batch = append(batch, e); len(batch) == enqueuePage {
			return flush()
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("deliveries of %s: %w", m, err)
	}
	// The mark goes last: the batches are enqueued in order, each in
	// order, so a crash between writes leaves the month unmarked and
	// derived again.
	if s.Manifest.Final() {
		batch = append(batch, outbox.Entry{ID: markID(m), Kind: outbox.KindMark, At: now, Sent: now})
	}
	if err := flush(); err != nil {
		return n, fmt.Errorf("deliveries of %s: %w", m, err)
	}
	if s.Manifest.Final() && n > 0 {
		n-- // the mark is no delivery
	}
	return n, nil
}

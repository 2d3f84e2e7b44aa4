package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/locale"
	"github.com/reportjob/reportjob/internal/mail"
	moneypkg "github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/outbox"
)

func crashAfterSend(string) { crashpoint.Hit(crashpoint.DeliveryAfterSend) }
func crashBeforeSend()      { crashpoint.Hit(crashpoint.DeliveryBeforeSend) }

// contentTypes of the statement files attached.
var contentTypes = map[string]string{".pdf": "application/pdf", ".csv": "text/csv; charset=utf-8"}

// Compose builds the e-mail of a mail entry: to the agency's addresses
// from the directory, each configured file attached (read from the sink,
// checked against the manifest's sha256), subject and body in the
// agency's locale. resend is 0 for the first send, n for the n-th
// deliberate resend (a new message, with a note).
func (p *Pass) Compose(ctx context.Context, e outbox.Entry, resend int) (*mail.Message, error) {
	var d MailData
	if err := json.Unmarshal(e.Payload, &d); err != nil {
		return nil, fmt.Errorf("mail entry %s: %w", e.ID, err)
	}
	if p.DirectoryErr != nil {
		return nil, fmt.Errorf("agency %q: the agency directory is unreadable: %w", d.AgencyID, p.DirectoryErr)
	}
	var r Recipient
	ok := false
	if p.Directory != nil {
		r, ok = p.Directory.Lookup(d.AgencyID)
	}
	if !ok || len(r.Emails) == 0 {
		return nil, fmt.Errorf("agency %q: %w", d.AgencyID, ErrNoAddress)
	}
	loc := locale.ForDocument(r.Locale)
	name := r.LegalName
	if name == "" {
		name = d.AgencyID
	}
	number := d.Number
	if number == "" {
		number = fmt.Sprintf("%s/%s", d.Month, d.AgencyID)
	}
	var amounts []string
	for _, t := range d.Totals {
		amounts = append(amounts, localMoney(loc, t.Currency, t.CommissionDue))
	}
	due := d.Due
	if due == "" {
		terms := p.TermsDays
		if r.HasTerms {
			terms = r.TermsDays
		}
		due = d.Issued.AddDate(0, 0, terms).Format(time.DateOnly)
	}
	due = loc.Date(due)
	month := loc.Month(d.Month)
	issuer, contact, instructions := p.Issuer, p.Contact, p.Instructions
	if d.Issuer != "" {
		issuer, contact, instructions = d.Issuer, d.Contact, d.Instructions
	}
	if issuer == "" {
		issuer = p.Job
	}
	subject := loc.T("mail.subject", "issuer", issuer, "number", number, "month", month)
	// The instructions and the contact are paragraphs of their own, left
	// out when the issuer has none.
	paras := []string{loc.T("mail.body", "agency", name, "number", number, "month", month, "amounts", strings.Join(amounts, ", "),
		"due", due)}
	if strings.TrimSpace(instructions) != "" {
		paras = append(paras, loc.T("mail.instructions", "instructions", instructions))
	}
	if strings.TrimSpace(contact) != "" {
		paras = append(paras, loc.T("mail.contact", "contact", contact))
	}
	body := strings.Join(append(paras, loc.T("mail.closing", "issuer", issuer)), "\n\n")
	if resend > 0 {
		body = loc.T("mail.resent_note") + "\n\n" + body
	}
	m := &mail.Message{From: p.Email.From, ReplyTo: p.Email.ReplyTo, To: r.Emails, Bcc: p.Email.Bcc, Subject: subject, Body: body,
		MessageID: mail.MessageID(p.Job, d.Month, d.AgencyID, d.StatementRevision, resend, mail.Domain(p.Email.From)),
		Date:      p.now(),
		Headers: map[string]string{"X-Reportjob-Job": p.Job, "X-Reportjob-Month": d.Month, "X-Reportjob-Agency": d.AgencyID,
			"X-Reportjob-Statement-Revision": fmt.Sprint(d.StatementRevision)}}
	if resend > 0 {
		m.Headers["X-Reportjob-Resend"] = fmt.Sprint(resend)
	}
	for _, f := range d.Files {
		b, err := p.Objects.ReadAll(ctx, f.Key)
		if err != nil {
			return nil, fmt.Errorf("attachment %s: %w", f.Key, err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			return nil, fmt.Errorf("attachment %s: sha256 %s, the manifest lists %s: not sent", f.Key, got, f.SHA256)
		}
		ext := path.Ext(f.Key)
		m.Attachments = append(m.Attachments, mail.Attachment{Name: fmt.Sprintf("statement-%s-%s%s", d.Month, safeName(d.AgencyID), ext),
			ContentType: contentTypes[ext], Data: b})
	}
	return m, nil
}

// safeName keeps letters, digits, '-', '_' and '.' of an agency id for a
// file name (others become '_').
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// sendMail composes and sends a mail entry.
func (p *Pass) sendMail(ctx context.Context, e outbox.Entry, resend bool) error {
	n := 0
	if resend {
		n = e.Resends + 1
	}
	m, err := p.Compose(ctx, e, n)
	if err != nil {
		return err
	}
	if p.Mailer == nil {
		return fmt.Errorf("delivery.email is not configured")
	}
	return p.Mailer.Send(ctx, m)
}

// localMoney writes an exact amount of currency code in the locale's way (as
// given when it does not parse).
func localMoney(loc *locale.Locale, code, amount string) string {
	c, err := moneypkg.LookupCurrency(code)
	if err != nil {
		return code + " " + amount
	}
	v, err := moneypkg.ParseAmount(amount, c)
	if err != nil {
		return code + " " + amount
	}
	return loc.Money(c, moneypkg.TotalOf(v))
}

package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/mail"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

var t0 = time.Date(2026, 4, 4, 0, 5, 0, 0, time.UTC)

type fakeStatements map[string]*monthclose.Statement

func (f fakeStatements) Months(context.Context) ([]string, error) {
	var out []string
	for m := range f {
		out = append(out, m)
	}
	return out, nil
}

func (f fakeStatements) Read(_ context.Context, m string) (*monthclose.Statement, error) {
	return f[m], nil
}

type fakeObjects map[string][]byte

func (f fakeObjects) ReadAll(_ context.Context, key string) ([]byte, error) {
	if b, ok := f[key]; ok {
		return b, nil
	}
	return nil, errors.New("not found")
}

type fakeDir map[string]Recipient

func (f fakeDir) Lookup(id string) (Recipient, bool) { r, ok := f[id]; return r, ok }

type fakeMailer struct {
	sent []*mail.Message
	fail error
}

func (f *fakeMailer) Send(_ context.Context, m *mail.Message) error {
	if f.fail != nil {
		return f.fail
	}
	f.sent = append(f.sent, m)
	return nil
}

type fakePoster struct{ ids []string }

func (f *fakePoster) Send(_ context.Context, _ string, _ []byte, id string, _ []byte) error {
	f.ids = append(f.ids, id)
	return nil
}

type holder struct{ l checkpoint.Lease }

func (h holder) Lease() checkpoint.Lease { return h.l }
func (h holder) Check() error            { return nil }

// setup returns a pass over a final March with agencies acme (an address)
// and beta (none), an endpoint for every event, and its outbox's lease.
func setup(t *testing.T) (*Pass, holder, *fakeMailer, *fakePoster) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := st.Acquire(t.Context(), "j", "me", t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pdf := []byte("%PDF acme")
	sum := sha256.Sum256(pdf)
	pdfKey := report.AgencyMonthPrefix("acme", "2026-03") + "statement-x.pdf"
	usd, _ := money.LookupCurrency("USD")
	row := func(agency string) encode.StatementRow {
		r := encode.StatementRow{Month: "2026-03", Status: "final", AgencyID: agency, Currency: usd, StatementRevision: 3}
		r.Line.Currency = usd
		return r
	}
	man := &monthclose.Manifest{Month: "2026-03", Status: string(statement.Final), StatementRevision: 3, GeneratedAt: t0,
		Periods:  []monthclose.PeriodEntry{{Key: "manifests/period=x/manifest.json", Start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Revision: 2}},
		Agencies: []monthclose.AgencyEntry{{AgencyID: "acme", Revision: 3}, {AgencyID: "beta", Revision: 2}},
		Files:    []report.FileInfo{{Key: pdfKey, Bytes: int64(len(pdf)), SHA256: hex.EncodeToString(sum[:])}}}
	ml, po := &fakeMailer{}, &fakePoster{}
	p := &Pass{Job: "j", Email: config.Email{Host: "smtp.example.com", From: "b@example.com", Attach: []string{"pdf"}},
		Webhooks:   []config.Webhook{{ID: "ep-1", URL: "https://x.example/h", SecretEnv: "S", Events: config.EventTypes}},
		Statements: fakeStatements{"2026-03": {Manifest: man, Rows: []encode.StatementRow{row("acme"), row("beta")}}},
		Objects:    fakeObjects{pdfKey: pdf}, Directory: fakeDir{"acme": {Emails: []string{"ap@acme.example"}}},
		Outbox: st, Mailer: ml, Poster: po, Getenv: func(string) string { return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
		Clock: func() time.Time { return t0 }}
	return p, holder{l}, ml, po
}

func TestPassOnce(t *testing.T) {
	p, h, ml, po := setup(t)
	res, err := p.Run(t.Context(), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// events: period.delivered, period.restated (revision 2), 2 statement.final, month.closed
	if res.MailSent != 1 || res.EventsSent != 5 || len(res.Failures) != 1 || res.Failures[0].Target != "beta" || res.Pending != 1 {
		t.Fatalf("first pass %+v", res)
	}
	if !strings.Contains(res.Failures[0].Error, ErrNoAddress.Error()) {
		t.Errorf("beta's failure: %s", res.Failures[0].Error)
	}
	m := ml.sent[0]
	if m.MessageID != mail.MessageID("j", "2026-03", "acme", 3, 0, "example.com") || len(m.Attachments) != 1 || string(m.Attachments[0].Data) != "%PDF acme" {
		t.Errorf("message %+v", m)
	}
	// The second pass sends nothing new; beta is not due before its backoff.
	res, err = p.Run(t.Context(), h, Options{})
	if err != nil || res.MailSent+res.EventsSent != 0 || len(res.Failures) != 0 || res.Pending != 1 || res.Enqueued != 0 {
		t.Errorf("second pass %+v, %v", res, err)
	}
	if len(ml.sent) != 1 || len(po.ids) != 5 {
		t.Errorf("%d mails, %d events in all", len(ml.sent), len(po.ids))
	}
	// A resend is a new message.
	res, err = p.Run(t.Context(), h, Options{Resend: true, Month: "2026-03", MailOnly: true})
	if err != nil || res.Resent != 1 || ml.sent[1].MessageID == m.MessageID || ml.sent[1].Headers["X-Reportjob-Resend"] != "1" {
		t.Errorf("resend %+v, %v", res, err)
	}
}

func TestPassAttachmentMismatch(t *testing.T) {
	p, h, ml, _ := setup(t)
	for k := range p.Objects.(fakeObjects) {
		p.Objects.(fakeObjects)[k] = []byte("tampered")
	}
	res, err := p.Run(t.Context(), h, Options{MailOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.sent) != 0 || len(res.Failures) != 2 || !strings.Contains(res.Failures[0].Error+res.Failures[1].Error, "sha256") {
		t.Errorf("a changed attachment: sent %d, failures %+v", len(ml.sent), res.Failures)
	}
}

func TestEventID(t *testing.T) {
	a := EventID("j", StatementFinal, "2026-03/acme")
	if a != EventID("j", StatementFinal, "2026-03/acme") || a == EventID("j", StatementFinal, "2026-03/beta") || len(a) != 4+24 {
		t.Errorf("EventID %s", a)
	}
}

func TestDraftsOnRequest(t *testing.T) {
	for _, drafts := range []bool{false, true} {
		p, h, ml, po := setup(t)
		s := p.Statements.(fakeStatements)["2026-03"]
		s.Manifest.Status = string(statement.Draft)
		p.Email.Drafts = drafts
		res, err := p.Run(t.Context(), h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// A draft month: its periods' events only (delivered, restated).
		if len(po.ids) != 2 {
			t.Errorf("drafts %v: %d events, want 2", drafts, len(po.ids))
		}
		if wantMails := map[bool]int{false: 0, true: 1}[drafts]; len(ml.sent) != wantMails || res.MailSent != wantMails {
			t.Errorf("drafts %v: %d mails sent, want %d", drafts, len(ml.sent), wantMails)
		}
	}
}

// badMonth is a statements reader with one more month that cannot be read.
type badMonth struct{ fakeStatements }

func (b badMonth) Months(ctx context.Context) ([]string, error) {
	ms, _ := b.fakeStatements.Months(ctx)
	return append([]string{"2026-02"}, ms...), nil
}

func (b badMonth) Read(ctx context.Context, m string) (*monthclose.Statement, error) {
	if m == "2026-02" {
		return nil, errors.New("statements file corrupt")
	}
	return b.fakeStatements.Read(ctx, m)
}

func TestUnreadableMonthBlocksNoOther(t *testing.T) {
	p, h, ml, po := setup(t)
	p.Statements = badMonth{p.Statements.(fakeStatements)}
	res, err := p.Run(t.Context(), h, Options{})
	if err == nil || !strings.Contains(err.Error(), "2026-02") {
		t.Errorf("Run: %v, want the unreadable month named", err)
	}
	if len(ml.sent) != 1 || len(po.ids) != 5 || res.MailSent != 1 {
		t.Errorf("with an unreadable month: %d mails, %d events sent; want March's all", len(ml.sent), len(po.ids))
	}
}

// TestSince: the months before delivery.since are neither enqueued nor
// sent, and stay so while it is set; moving it back delivers them then.
func TestSince(t *testing.T) {
	p, h, ml, po := setup(t)
	p.Since = "2026-04"
	res, err := p.Run(t.Context(), h, Options{})
	if err != nil || res.Enqueued != 0 || len(ml.sent) != 0 || len(po.ids) != 0 || res.Pending != 0 {
		t.Fatalf("March before since 2026-04: %+v, %v; %d mails, %d events", res, err, len(ml.sent), len(po.ids))
	}
	p.Since = "2026-03"
	res, err = p.Run(t.Context(), h, Options{})
	if err != nil || res.MailSent != 1 || res.EventsSent != 5 {
		t.Fatalf("since moved back to 2026-03: %+v, %v", res, err)
	}
}

// failPoster refuses every event.
type failPoster struct{}

func (failPoster) Send(context.Context, string, []byte, string, []byte) error {
	return errors.New("503 Service Unavailable")
}

// TestFailuresListedAtMost: a month of 50 agencies whose mail server and
// endpoint both refuse: the pass counts 101 failures, lists the first
// MaxFailuresListed, and names the one endpoint once.
func TestFailuresListedAtMost(t *testing.T) {
	p, h, _, _ := setup(t)
	p.Statements, p.Objects, p.Directory = marketplaceMonth(50)
	p.Mailer, p.Poster = &fakeMailer{fail: errors.New("451 try later")}, failPoster{}
	res, err := p.Run(t.Context(), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 50 e-mails, 50 statement.final events and month.closed
	if res.Failed != 101 || len(res.Failures) != MaxFailuresListed || res.Pending != 101 ||
		len(res.EndpointsFailing) != 1 || res.EndpointsFailing["ep-1"] != 1 {
		t.Fatalf("pass: failed %d, %d listed, pending %d, endpoints %v", res.Failed, len(res.Failures), res.Pending, res.EndpointsFailing)
	}
}

// TestDirectoryUnreadable: with the directory unreadable, each e-mail
// fails with why, not with "no address", and stays pending.
func TestDirectoryUnreadable(t *testing.T) {
	p, h, ml, _ := setup(t)
	p.DirectoryErr = errors.New("agencies.csv line 3: wrong number of fields")
	res, err := p.Run(t.Context(), h, Options{MailOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.sent) != 0 || res.Failed != 2 || res.Pending != 7 { // the 2 e-mails and the 5 events (MailOnly)
		t.Fatalf("pass: %+v", res)
	}
	for _, f := range res.Failures {
		if !strings.Contains(f.Error, "the agency directory is unreadable: agencies.csv line 3") || strings.Contains(f.Error, ErrNoAddress.Error()) {
			t.Errorf("%s: %s", f.Target, f.Error)
		}
	}
}

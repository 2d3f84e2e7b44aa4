//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/delivery"
	"github.com/reportjob/reportjob/internal/mail"
	"github.com/reportjob/reportjob/internal/mailpit"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
	"github.com/reportjob/reportjob/internal/webhook"
)

// The delivery tests' scenario: daily periods from 2026-01-31 (one period
// in January), close_after 1h, no rechecks: one run at dlvNow delivers
// 2026-01-31 and closes January final, then its delivery pass e-mails the
// statements of the agencies with an address and posts the events.

const (
	dlvIngestNow = "2026-01-31T12:00:00Z"
	dlvNow       = "2026-02-01T01:05:00Z"
	dlvSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	dlvSecretEnv = "RJTEST_HOOK_SECRET"
	dlvFrom      = "Billing <billing@example.com>"
)

// hookReceiver is a webhook endpoint as a receiver runs one: it verifies
// each signature with the endpoint's secret, counts what it accepted by
// webhook-id, and fails on purpose while down.
type hookReceiver struct {
	srv      *httptest.Server
	key      []byte
	mode     atomic.Value // string: "ok", "503", "timeout", "drop"
	mu       sync.Mutex
	accepted map[string]int
	bodies   map[string]string
	attempts atomic.Int64
	badSig   atomic.Int64
}

func newHookReceiver(t *testing.T) *hookReceiver {
	key, err := webhook.Key(dlvSecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &hookReceiver{key: key, accepted: map[string]int{}, bodies: map[string]string{}}
	r.mode.Store("ok")
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	r.attempts.Add(1)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	if err := webhook.Verify(r.key, req.Header, body, time.Now(), 5*time.Minute); err != nil {
		r.badSig.Add(1)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	switch r.mode.Load().(string) {
	case "503":
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	case "timeout":
		time.Sleep(time.Second) // the sender gives up first (RJTEST_WEBHOOK_TIMEOUT)
		http.Error(w, "too late", http.StatusServiceUnavailable)
		return
	case "drop":
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
	}
	id := req.Header.Get(webhook.HeaderID)
	r.mu.Lock()
	r.accepted[id]++
	r.bodies[id] = string(body)
	r.mu.Unlock()
}

func (r *hookReceiver) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.accepted {
		out[k] = v
	}
	return out
}

// dlvAgency is an agency of the scenario.
type dlvAgency struct {
	id, currency, amount string
	emails               []string
	locale               string
	refused              bool // its address is refused (plain mailpit only)
}

// dlv is one scenario: a harness with e-mail and a webhook configured.
type dlv struct {
	r        *stRunner
	mp       mailpit.Server
	rcv      *hookReceiver
	tag      string
	agencies []dlvAgency
	env      []string
}

var dlvSeq atomic.Int64

// newDlv writes the scenario's directory and config; backend "embedded"
// sends over plain SMTP, "aws" over STARTTLS with the project's
// certificate.
func newDlv(t *testing.T, bin, backend string, moreYAML ...string) *dlv {
	t.Helper()
	smtpVar, apiVar, tlsMode := "RJTEST_MAILPIT_SMTP", "RJTEST_MAILPIT_API", "none"
	if backend == "aws" {
		smtpVar, apiVar, tlsMode = "RJTEST_MAILPIT_TLS_SMTP", "RJTEST_MAILPIT_TLS_API", "starttls"
	}
	addr := testenv.Require(t, smtpVar, "mailpit (scripts/servers.sh)")
	api := testenv.Require(t, apiVar, "mailpit's API")
	host, port, _ := net.SplitHostPort(addr)
	d := &dlv{mp: mailpit.Server{API: api}, rcv: newHookReceiver(t),
		tag: fmt.Sprintf("%s%d-%d", backend[:1], time.Now().UnixNano()%1_000_000_000, dlvSeq.Add(1))}
	d.agencies = []dlvAgency{
		{id: "acme", currency: "USD", amount: "12.34", emails: []string{"ap-" + d.tag + "@acme.example", "cfo-" + d.tag + "@acme.example"}},
		{id: "beta", currency: "EUR", amount: "99.99", emails: []string{"compta-" + d.tag + "@beta.example"}, locale: "fr-FR"},
		{id: "gamma", currency: "JPY", amount: "1500"}, // no address
	}
	if tlsMode == "none" {
		d.agencies = append(d.agencies, dlvAgency{id: "delta", currency: "USD", amount: "5.00", emails: []string{"x-" + d.tag + "@refused.invalid"}, refused: true})
	}
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n")
	for _, a := range d.agencies {
		fmt.Fprintf(&csv, "%s,%s Ltd,,,,%s,%s,\n", a.id, strings.ToUpper(a.id[:1])+a.id[1:], strings.Join(a.emails, ";"), a.locale)
	}
	dirFile := path.Join(dir, "agencies.csv")
	if err := os.WriteFile(dirFile, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	top := fmt.Sprintf(`statements: {timezone: UTC, close_after: 1h, agency_files: [pdf, csv], directory: %q}
delivery:
  email: {host: %q, port: %s, tls: %s, from: %q, bcc: ["archive-%s@example.com"], attach: [pdf, csv]}
  webhooks:
    - {url: %q, secret_env: %s, events: [period.delivered, period.restated, statement.final, month.closed]}`,
		dirFile, host, port, tlsMode, dlvFrom, d.tag, d.rcv.srv.URL+"/hook", dlvSecretEnv)
	for _, y := range moreYAML {
		top += "\n" + y
	}
	h := procHarness(t, backend, harnessOptions{start: "2026-01-31", period: "24h",
		extra: "  recheck_after: []\n" + crashExtra(backend), top: top})
	d.env = []string{dlvSecretEnv + "=" + dlvSecret, envTestDeliveryBackoff + "=0s", envTestWebhookTimeout + "=300ms"}
	if tlsMode == "starttls" {
		d.env = append(d.env, "SSL_CERT_FILE="+os.Getenv(testenv.EnvS3CA))
	}
	h.env = append(h.env, d.env...)
	d.r = &stRunner{t: t, h: h, bin: bin, final: map[string]map[string]string{}}
	d.r.cli(0, "init")
	var txs []stTx
	for i, a := range d.agencies {
		txs = append(txs, stTx{id: fmt.Sprintf("t%02d", i), agency: a.id, amount: a.amount, currency: a.currency,
			at: fmt.Sprintf("2026-01-31T%02d:10:00Z", 5+i)})
	}
	d.r.ingest(dlvIngestNow, txs...)
	return d
}

// mailed reports whether agency a's statement is to reach it.
func (a dlvAgency) mailed() bool { return len(a.emails) > 0 && !a.refused }

// dlvMail is what mailpit received for one agency.
type dlvMail struct {
	ids      []string // Message-IDs, one per copy
	messages []mailpit.Message
}

// mails returns what mailpit received for each agency of d (by its first
// address). mailpit may index a message a moment after it accepted it:
// the search is repeated until every agency to be mailed has a message
// (at most 5 s), then read once more a little later, so that a late copy
// is counted too.
func (d *dlv) mails(t *testing.T) map[string]dlvMail {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := d.mailsOnce(t)
		complete := true
		for _, a := range d.agencies {
			complete = complete && (!a.mailed() || len(out[a.id].ids) > 0)
		}
		if complete || time.Now().After(deadline) {
			time.Sleep(300 * time.Millisecond)
			return d.mailsOnce(t)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *dlv) mailsOnce(t *testing.T) map[string]dlvMail {
	t.Helper()
	out := map[string]dlvMail{}
	for _, a := range d.agencies {
		if len(a.emails) == 0 {
			continue
		}
		ms, err := d.mp.Search(t.Context(), "to:"+a.emails[0])
		if err != nil {
			t.Fatal(err)
		}
		var m dlvMail
		for _, x := range ms {
			m.ids = append(m.ids, "<"+x.MessageID+">")
			m.messages = append(m.messages, x)
		}
		out[a.id] = m
	}
	return out
}

// expected returns the Message-ID of each mailed agency's final statement
// and the events of the scenario (id -> type), from the published record.
func (d *dlv) expected(t *testing.T) (map[string]string, map[string]string, *monthclose.Manifest) {
	t.Helper()
	man := d.r.monthManifest("2026-01")
	if !man.Final() {
		t.Fatalf("January is %s, want final", man.Status)
	}
	mids := map[string]string{}
	events := map[string]string{}
	for _, a := range d.agencies {
		rev := 0
		for _, e := range man.Agencies {
			if e.AgencyID == a.id {
				rev = e.Revision
			}
		}
		if a.mailed() {
			mids[a.id] = mail.MessageID("e2e", "2026-01", a.id, rev, 0, "example.com")
		}
		events[delivery.EventID("e2e", delivery.StatementFinal, "2026-01/"+a.id)] = delivery.StatementFinal
	}
	events[delivery.EventID("e2e", delivery.MonthClosed, "2026-01")] = delivery.MonthClosed
	for _, p := range man.Periods {
		events[delivery.EventID("e2e", delivery.PeriodDelivered, p.Start.UTC().Format(time.RFC3339))] = delivery.PeriodDelivered
	}
	return mids, events, man
}

// sinkSHA returns the sha256 of the agency's statement file with ext.
func (d *dlv) sinkFile(t *testing.T, man *monthclose.Manifest, agency, ext string) (string, []byte) {
	t.Helper()
	for _, k := range monthclose.AgencyFiles(man, agency) {
		if strings.HasSuffix(k, ext) {
			b := d.r.h.read(d.r.h.sink(), k)
			sum := sha256.Sum256(b)
			return hex.EncodeToString(sum[:]), b
		}
	}
	t.Fatalf("no %s file of %s in %s", ext, agency, report.MonthManifestKey(man.Month))
	return "", nil
}

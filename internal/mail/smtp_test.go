package mail

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/mailpit"
)

// server returns the mailpit SMTP address and API from the environment
// (scripts/servers.sh); it skips without them, unless servers are required.
func server(t *testing.T, smtpVar, apiVar string) (string, int, mailpit.Server) {
	t.Helper()
	addr, api := os.Getenv(smtpVar), os.Getenv(apiVar)
	if addr == "" || api == "" {
		if os.Getenv("RJTEST_REQUIRE_SERVERS") != "" || os.Getenv("CI") != "" {
			t.Fatalf("%s / %s not set: start the servers (scripts/servers.sh)", smtpVar, apiVar)
		}
		t.Skipf("%s not set", smtpVar)
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return host, p, mailpit.Server{API: api}
}

func testMessage(t *testing.T, to ...string) *Message {
	id := MessageID("mailtest-"+strconv.FormatInt(time.Now().UnixNano(), 36), "2026-03", "acme", 1, 0, "example.com")
	return &Message{From: "Billing <billing@example.com>", To: to, Bcc: []string{"archive@example.com"},
		Subject: "Statement 2026-03", Body: "Hello", MessageID: id, Date: time.Now(),
		Attachments: []Attachment{{Name: "statement.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 \x00\x01 fake")}}}
}

func TestSendMailpit(t *testing.T) {
	for _, tt := range []struct {
		name, smtp, api, mode string
		user                  string
	}{
		{"plain", "RJTEST_MAILPIT_SMTP", "RJTEST_MAILPIT_API", "none", ""},
		{"starttls", "RJTEST_MAILPIT_TLS_SMTP", "RJTEST_MAILPIT_TLS_API", "starttls", ""},
		{"starttls with auth", "RJTEST_MAILPIT_TLS_SMTP", "RJTEST_MAILPIT_TLS_API", "starttls", "billing"},
		{"implicit tls", "RJTEST_MAILPIT_IMPLICIT_SMTP", "RJTEST_MAILPIT_IMPLICIT_API", "tls", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host, port, mp := server(t, tt.smtp, tt.api)
			c := &Client{Host: host, Port: port, TLS: tt.mode, Username: tt.user, Password: "pw-" + tt.user}
			if tt.mode != "none" {
				pem, err := os.ReadFile(os.Getenv("RJTEST_S3_CA"))
				if err != nil {
					t.Fatal(err)
				}
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				c.TLSConfig = &tls.Config{RootCAs: pool}
			}
			m := testMessage(t, "ap@agency.example")
			if err := c.Send(t.Context(), m); err != nil {
				t.Fatal(err)
			}
			got, err := mp.Search(t.Context(), "message-id:"+m.MessageID[1:len(m.MessageID)-1])
			if err != nil || len(got) != 1 {
				t.Fatalf("mailpit has %d messages with the id, %v", len(got), err)
			}
			full, err := mp.Get(t.Context(), got[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if full.Subject != m.Subject || len(full.To) != 1 || full.To[0].Address != "ap@agency.example" || len(full.Attachments) != 1 {
				t.Fatalf("message %+v", full)
			}
			b, err := mp.Part(t.Context(), full.ID, full.Attachments[0].PartID)
			if err != nil || !bytes.Equal(b, m.Attachments[0].Data) {
				t.Errorf("attachment %q, %v", b, err)
			}
		})
	}
	t.Run("starttls required", func(t *testing.T) {
		host, port, _ := server(t, "RJTEST_MAILPIT_TLS_SMTP", "RJTEST_MAILPIT_TLS_API")
		c := &Client{Host: host, Port: port, TLS: "starttls"} // the system roots do not trust the test certificate
		if err := c.Send(t.Context(), testMessage(t, "ap@agency.example")); err == nil {
			t.Error("STARTTLS with an untrusted certificate: no error")
		}
	})
	t.Run("refused", func(t *testing.T) {
		host, port, _ := server(t, "RJTEST_MAILPIT_SMTP", "RJTEST_MAILPIT_API")
		c := &Client{Host: host, Port: port, TLS: "none"}
		err := c.Send(t.Context(), testMessage(t, "ap@agency.example", "nobody@refused.invalid"))
		if !errors.Is(err, ErrRefused) {
			t.Errorf("a refused recipient: %v", err)
		}
	})
}

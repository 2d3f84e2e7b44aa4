package mail

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"
)

func TestMessageID(t *testing.T) {
	a := MessageID("billing-report", "2026-03", "acme", 4, 0, "example.com")
	if a != MessageID("billing-report", "2026-03", "acme", 4, 0, "example.com") {
		t.Fatal("not deterministic")
	}
	if !strings.HasPrefix(a, "<") || !strings.HasSuffix(a, ".billing-report@example.com>") || len(a) != len("<0123456789abcdef.billing-report@example.com>") {
		t.Errorf("MessageID = %s", a)
	}
	for _, b := range []string{
		MessageID("billing-report", "2026-03", "acme", 5, 0, "example.com"),
		MessageID("billing-report", "2026-04", "acme", 4, 0, "example.com"),
		MessageID("billing-report", "2026-03", "acme2", 4, 0, "example.com"),
		MessageID("other", "2026-03", "acme", 4, 0, "example.com"),
		MessageID("billing-report", "2026-03", "acme", 4, 1, "example.com"),
	} {
		if b == a {
			t.Errorf("%s: same id for other inputs", b)
		}
	}
	if d := Domain("Billing <billing@example.org>"); d != "example.org" {
		t.Errorf("Domain = %s", d)
	}
}

func TestMessageBytes(t *testing.T) {
	m := &Message{From: "Billing <billing@example.com>", To: []string{"a@agency.example", "Ünïcode <b@agency.example>"},
		Bcc: []string{"archive@example.com"}, ReplyTo: "finance@example.com", Subject: "Relevé 2026-03 ✓",
		Body: "Bonjour,\nvoici le relevé.\n", MessageID: MessageID("j", "2026-03", "a", 1, 0, "example.com"),
		Date: time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC), Headers: map[string]string{"X-Reportjob-Statement": "S-202603-000001"},
		Attachments: []Attachment{{Name: "statement.pdf", ContentType: "application/pdf", Data: bytes.Repeat([]byte{0, 1, 2, 255}, 100)}}}
	b, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := m.Bytes()
	if !bytes.Equal(b, b2) {
		t.Error("same message, different bytes")
	}
	if bytes.Contains(b, []byte("archive@")) {
		t.Error("Bcc in the headers")
	}
	msg, err := mail.ReadMessage(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	dec := new(mime.WordDecoder)
	if s, _ := dec.DecodeHeader(msg.Header.Get("Subject")); s != m.Subject {
		t.Errorf("subject %q", s)
	}
	if msg.Header.Get("Message-Id") != m.MessageID {
		t.Errorf("message-id %q", msg.Header.Get("Message-Id"))
	}
	_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var parts int
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			data, _ = base64.StdEncoding.DecodeString(strings.ReplaceAll(string(data), "\r\n", ""))
		}
		if parts == 1 && (!bytes.Equal(data, m.Attachments[0].Data) || p.FileName() != "statement.pdf") {
			t.Errorf("attachment %q: %d bytes differ", p.FileName(), len(data))
		}
		if parts == 0 && !strings.Contains(string(data), "voici le relev") {
			t.Errorf("body %q", data)
		}
		parts++
	}
	if parts != 2 {
		t.Errorf("%d parts", parts)
	}
	rc, _ := m.Recipients()
	if strings.Join(rc, ",") != "a@agency.example,b@agency.example,archive@example.com" {
		t.Errorf("recipients %v", rc)
	}
}

func TestNoTLSOnlyToLoopback(t *testing.T) {
	c := &Client{Host: "smtp.example.com", Port: 25, TLS: "none"}
	err := c.Send(context.Background(), &Message{From: "a@b.c", To: []string{"d@e.f"}, MessageID: "<x@y>"})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("Send without TLS to a remote host: %v", err)
	}
}

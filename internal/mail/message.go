// Package mail builds and sends the e-mail of a statement: a MIME message
// (a text body and attachments) with a deterministic Message-ID, sent
// over SMTP with STARTTLS, implicit TLS, or (to a loopback server only)
// none.
package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Attachment is a file attached to a message.
type Attachment struct {
	Name        string
	ContentType string
	Data        []byte
}

// Message is one e-mail. To and Bcc are envelope recipients; Bcc never
// appears in the headers.
type Message struct {
	From, ReplyTo string
	To, Bcc       []string
	Subject, Body string
	// MessageID is the Message-ID header, with its angle brackets.
	MessageID string
	Date      time.Time
	// Headers are extra headers (X-Reportjob-*), written sorted by name.
	Headers     map[string]string
	Attachments []Attachment
}

// MessageID returns the Message-ID of the e-mail of (job, month, agency,
// statement revision), "<hex16.job@domain>": the same for every attempt,
// so that a receiver can drop a duplicate. resend > 0 numbers a deliberate
// resend, which is a new message with its own id. domain is the From
// address's.
func MessageID(job, month, agency string, revision, resend int, domain string) string {
	h := sha256.New()
	fmt.Fprintf(h, "reportjob.mail/1\x00%s\x00%s\x00%s\x00%d", job, month, agency, revision)
	if resend > 0 {
		fmt.Fprintf(h, "\x00resend %d", resend)
	}
	return "<" + hex.EncodeToString(h.Sum(nil)[:8]) + "." + job + "@" + domain + ">"
}

// Domain returns the domain of an address ("Billing <b@example.com>" ->
// example.com), "localhost" when it has none.
func Domain(addr string) string {
	if a, err := mail.ParseAddress(addr); err == nil {
		addr = a.Address
	}
	if i := strings.LastIndexByte(addr, '@'); i >= 0 && i+1 < len(addr) {
		return addr[i+1:]
	}
	return "localhost"
}

// Bytes returns the message as sent (CRLF line ends): the same message
// gives the same bytes (the MIME boundary comes from the Message-ID).
func (m *Message) Bytes() ([]byte, error) {
	var b bytes.Buffer
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return nil, fmt.Errorf("mail from %q: %w", m.From, err)
	}
	hdr("From", from.String())
	var to []string
	for _, a := range m.To {
		p, err := mail.ParseAddress(a)
		if err != nil {
			return nil, fmt.Errorf("mail to %q: %w", a, err)
		}
		to = append(to, p.String())
	}
	hdr("To", strings.Join(to, ", "))
	if m.ReplyTo != "" {
		p, err := mail.ParseAddress(m.ReplyTo)
		if err != nil {
			return nil, fmt.Errorf("mail reply-to %q: %w", m.ReplyTo, err)
		}
		hdr("Reply-To", p.String())
	}
	hdr("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	hdr("Date", m.Date.UTC().Format(time.RFC1123Z))
	hdr("Message-ID", m.MessageID)
	names := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		hdr(k, mime.QEncoding.Encode("utf-8", m.Headers[k]))
	}
	hdr("MIME-Version", "1.0")
	mw := multipart.NewWriter(&b)
	sum := sha256.Sum256([]byte(m.MessageID))
	if err := mw.SetBoundary("=_rj" + hex.EncodeToString(sum[:12])); err != nil {
		return nil, err
	}
	hdr("Content-Type", "multipart/mixed; boundary="+strconv.Quote(mw.Boundary()))
	b.WriteString("\r\n")
	pw, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {"text/plain; charset=utf-8"},
		"Content-Transfer-Encoding": {"quoted-printable"},
	})
	if err != nil {
		return nil, err
	}
	qp := quotedprintable.NewWriter(pw)
	qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")))
	qp.Close()
	for _, a := range m.Attachments {
		ct := a.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		name := mime.QEncoding.Encode("utf-8", a.Name)
		aw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {ct + "; name=" + strconv.Quote(name)},
			"Content-Disposition":       {"attachment; filename=" + strconv.Quote(name)},
			"Content-Transfer-Encoding": {"base64"},
		})
		if err != nil {
			return nil, err
		}
		enc := base64.StdEncoding.EncodeToString(a.Data)
		for len(enc) > 76 {
			aw.Write([]byte(enc[:76] + "\r\n"))
			enc = enc[76:]
		}
		aw.Write([]byte(enc + "\r\n"))
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Recipients returns the envelope recipients (To and Bcc) as bare
// addresses.
func (m *Message) Recipients() ([]string, error) {
	var out []string
	for _, a := range append(append([]string{}, m.To...), m.Bcc...) {
		p, err := mail.ParseAddress(a)
		if err != nil {
			return nil, fmt.Errorf("recipient %q: %w", a, err)
		}
		out = append(out, p.Address)
	}
	return out, nil
}

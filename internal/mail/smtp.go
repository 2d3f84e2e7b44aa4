package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strconv"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/fence"
)

// ErrRefused wraps the error of a recipient the server refused (RCPT TO
// answered 5xx): the message was not sent to anyone.
var ErrRefused = errors.New("recipient refused")

// ErrConfig is a transport that must not be used: no TLS to a host that is
// not loopback.
var ErrConfig = errors.New("mail: bad configuration")

// Client sends messages to one SMTP server.
type Client struct {
	Host string
	Port int
	// TLS is config.TLSStartTLS, config.TLSImplicit or config.TLSNone
	// (refused unless Host is loopback).
	TLS                string
	Username, Password string
	// TLSConfig, when set, is used for STARTTLS and implicit TLS
	// (ServerName is set to Host when empty); nil uses the system roots.
	TLSConfig *tls.Config
	// Timeout bounds one message's whole conversation (default 60 s).
	Timeout time.Duration
}

// Send delivers m: every recipient must be accepted, else nothing is sent
// (the error wraps ErrRefused and names the refused addresses). The run's
// lease (package fence) is checked before the conversation starts and
// again before the message's end is sent, the point at which the server
// takes it.
func (c *Client) Send(ctx context.Context, m *Message) error {
	if err := c.check(); err != nil {
		return err
	}
	data, err := m.Bytes()
	if err != nil {
		return err
	}
	rcpts, err := m.Recipients()
	if err != nil {
		return err
	}
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return fmt.Errorf("mail from %q: %w", m.From, err)
	}
	if err := fence.Check(ctx); err != nil {
		return err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := c.dial(ctx)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", c.addr(), err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	sc, err := smtp.NewClient(conn, c.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp %s: %w", c.addr(), err)
	}
	defer sc.Close()
	if err := sc.Hello("localhost"); err != nil {
		return fmt.Errorf("smtp %s: hello: %w", c.addr(), err)
	}
	if c.TLS == config.TLSStartTLS {
		if ok, _ := sc.Extension("STARTTLS"); !ok {
			return fmt.Errorf("smtp %s: the server does not offer STARTTLS (delivery.email.tls: starttls): %w", c.addr(), ErrConfig)
		}
		if err := sc.StartTLS(c.tlsConfig()); err != nil {
			return fmt.Errorf("smtp %s: starttls: %w", c.addr(), err)
		}
	}
	if c.Username != "" {
		if err := sc.Auth(smtp.PlainAuth("", c.Username, c.Password, c.Host)); err != nil {
			return fmt.Errorf("smtp %s: auth: %w", c.addr(), err)
		}
	}
	if err := sc.Mail(from.Address); err != nil {
		return fmt.Errorf("smtp %s: mail from: %w", c.addr(), err)
	}
	var refused []string
	var last error
	for _, r := range rcpts {
		if err := sc.Rcpt(r); err != nil {
			var te *textproto.Error
			if !errors.As(err, &te) || te.Code < 500 {
				return fmt.Errorf("smtp %s: rcpt to %s: %w", c.addr(), r, err)
			}
			refused, last = append(refused, r), err
		}
	}
	if len(refused) > 0 {
		sc.Reset()
		sc.Quit()
		return fmt.Errorf("smtp %s: %w: %v (%v); the message was not sent", c.addr(), ErrRefused, refused, last)
	}
	w, err := sc.Data()
	if err != nil {
		return fmt.Errorf("smtp %s: data: %w", c.addr(), err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("smtp %s: data: %w", c.addr(), err)
	}
	if err := fence.Check(ctx); err != nil {
		// The end of data is not sent: the server drops the message.
		conn.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp %s: end of data: %w", c.addr(), err)
	}
	sc.Quit()
	return nil
}

func (c *Client) addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

func (c *Client) check() error {
	switch c.TLS {
	case config.TLSStartTLS, config.TLSImplicit:
		return nil
	case config.TLSNone:
		if config.IsLoopback(c.Host) {
			return nil
		}
		return fmt.Errorf("%w: delivery.email.tls none to %q: only a loopback server may be used without TLS", ErrConfig, c.Host)
	}
	return fmt.Errorf("%w: delivery.email.tls %q", ErrConfig, c.TLS)
}

func (c *Client) tlsConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSConfig != nil {
		cfg = c.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = c.Host
	}
	return cfg
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if c.TLS == config.TLSImplicit {
		td := &tls.Dialer{NetDialer: d, Config: c.tlsConfig()}
		return td.DialContext(ctx, "tcp", c.addr())
	}
	return d.DialContext(ctx, "tcp", c.addr())
}

package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Keys of delivery.* read specially: the webhooks (a list of mappings, from
// the file only) and a password, which the file must never hold.
const (
	webhooksKey      = "delivery.webhooks"
	emailPasswordKey = "delivery.email.password"
)

// TLS modes of delivery.email.tls.
const (
	TLSStartTLS = "starttls" // plain connection upgraded with STARTTLS (required)
	TLSImplicit = "tls"      // TLS from the first byte (port 465)
	TLSNone     = "none"     // no TLS: a loopback server only (tests)
)

// EventTypes are the events a webhook endpoint can ask for.
var EventTypes = []string{"period.delivered", "period.restated", "statement.final", "month.closed"}

// sinceLayout is delivery.since's layout: a statement month.
const sinceLayout = "2006-01"

// emailAttachments are the statement files delivery.email.attach takes.
var emailAttachments = []string{"pdf", "csv"}

// Delivery is delivery.*: e-mail of final statements and signed events
// (docs/delivery.md).
type Delivery struct {
	// Since is the first statement month delivered (YYYY-MM, in
	// statements.timezone): the months before it are neither e-mailed nor
	// announced. "" delivers every month. It lets a job with history turn
	// delivery on without sending its past.
	Since string
	Email Email
	// Webhooks are the event endpoints, never nil; empty for none.
	Webhooks []Webhook
}

// Email is delivery.email.*. Host "" turns e-mail off.
type Email struct {
	Host string
	Port int
	// TLS is TLSStartTLS, TLSImplicit or TLSNone (only for a loopback
	// Host).
	TLS      string
	Username string
	// PasswordEnv names the environment variable holding the password;
	// PasswordFile is a file holding it (resolved against the config
	// file's folder). At most one is set; one is when Username is.
	PasswordEnv, PasswordFile string
	From, ReplyTo             string
	// Bcc are addresses every message is also sent to (finance's
	// archive), never nil.
	Bcc []string
	// Attach are the statement files attached: "pdf" and/or "csv".
	Attach []string
	// Drafts sends draft statements too (each draft revision once).
	Drafts bool
}

// Enabled reports whether e-mail is configured.
func (e Email) Enabled() bool { return e.Host != "" }

// Password returns the SMTP password from the environment variable or the
// file the config names ("" when neither is set); getenv looks a variable
// up.
func (e Email) Password(getenv func(string) string) (string, error) {
	switch {
	case e.PasswordEnv != "":
		p := getenv(e.PasswordEnv)
		if p == "" {
			return "", fmt.Errorf("delivery.email.password_env: the environment variable %s is not set", e.PasswordEnv)
		}
		return p, nil
	case e.PasswordFile != "":
		b, err := os.ReadFile(e.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("delivery.email.password_file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return "", nil
}

// Webhook is one entry of delivery.webhooks.
type Webhook struct {
	// ID names the endpoint in the outbox, status and metrics: "ep-" and
	// the first 12 hex digits of the URL's SHA-256 (stable while the URL
	// is).
	ID        string
	URL       string
	SecretEnv string
	// Events are the event types it receives, each of EventTypes once.
	Events []string
}

// Wants reports whether w receives events of type t.
func (w Webhook) Wants(t string) bool { return slices.Contains(w.Events, t) }

// EndpointID returns the ID of the endpoint at url.
func EndpointID(url string) string {
	h := sha256.Sum256([]byte(url))
	return "ep-" + hex.EncodeToString(h[:6])
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsLoopback reports whether host (a name or an IP, without port) is the
// loopback interface: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (d *decoder) decodeDelivery(c *Config) {
	if since := d.str("delivery.since"); since != "" {
		if t, err := time.Parse(sinceLayout, since); err != nil || t.Format(sinceLayout) != since {
			d.fail("delivery.since", since, "must be a statement month YYYY-MM, the first one delivered (e.g. 2026-11), or empty for every month")
		} else {
			c.Delivery.Since = since
		}
	}
	e := &c.Delivery.Email
	e.Host = d.str("delivery.email.host")
	e.Port = d.int("delivery.email.port", 1, 65535)
	e.TLS = d.oneOf("delivery.email.tls", TLSStartTLS, TLSImplicit, TLSNone)
	if e.TLS == TLSNone && e.Host != "" && !IsLoopback(e.Host) {
		d.fail("delivery.email.tls", e.TLS, fmt.Sprintf("none is only allowed for a loopback host (localhost, 127.0.0.1, ::1), not %q: use starttls or tls", e.Host))
	}
	e.Username = d.str("delivery.email.username")
	e.PasswordEnv = d.str("delivery.email.password_env")
	e.PasswordFile = d.str("delivery.email.password_file")
	switch {
	case e.PasswordEnv != "" && e.PasswordFile != "":
		d.fail("delivery.email.password_file", e.PasswordFile, "set password_env or password_file, not both")
	case e.PasswordEnv != "" && !envNameRE.MatchString(e.PasswordEnv):
		d.fail("delivery.email.password_env", e.PasswordEnv, "must be the name of an environment variable (A-Z a-z 0-9 _), not the password")
	case e.PasswordEnv != "" && e.Host != "" && d.getenv(e.PasswordEnv) == "":
		d.fail("delivery.email.password_env", e.PasswordEnv, "the environment variable is not set")
	case e.Username != "" && e.PasswordEnv == "" && e.PasswordFile == "":
		d.fail("delivery.email.username", e.Username, "needs password_env or password_file")
	}
	e.From = d.address("delivery.email.from", e.Host != "")
	e.ReplyTo = d.address("delivery.email.reply_to", false)
	e.Bcc = d.strs("delivery.email.bcc")
	for _, a := range e.Bcc {
		if _, err := mail.ParseAddress(a); err != nil {
			d.fail("delivery.email.bcc", listValue(e.Bcc), fmt.Sprintf("%q is not an e-mail address", a))
		}
	}
	e.Attach = d.formats("delivery.email.attach", emailAttachments)
	e.Drafts = d.bool("delivery.email.drafts")
	if c.Delivery.Webhooks == nil {
		c.Delivery.Webhooks = d.webhooks
	}
	if c.Delivery.Webhooks == nil {
		c.Delivery.Webhooks = []Webhook{}
	}
}

// address reads an e-mail address key ("" allowed unless required).
func (d *decoder) address(key string, required bool) string {
	s := d.str(key)
	switch {
	case s == "" && required:
		d.fail(key, s, "must be set when delivery.email.host is")
	case s == "":
	default:
		if _, err := mail.ParseAddress(s); err != nil {
			d.fail(key, s, "not an e-mail address: "+err.Error())
		}
	}
	return s
}

func (d *decoder) getenv(name string) string {
	for _, kv := range d.env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}

// readWebhooks reads delivery.webhooks from the YAML: a list of
// {url, secret_env, events}.
func (d *decoder) readWebhooks(name string, n *yaml.Node) {
	d.webhooks = []Webhook{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(webhooksKey, yamlSummary(n), "must be a list of {url, secret_env, events}")
		return
	}
	seen := map[string]bool{}
	for i, en := range n.Content {
		en = yamlDeref(en)
		key := fmt.Sprintf("%s[%d]", webhooksKey, i)
		d.src[key] = fmt.Sprintf("%s:%d", name, en.Line)
		if en.Kind != yaml.MappingNode {
			d.fail(key, yamlSummary(en), "must be a mapping {url, secret_env, events}")
			continue
		}
		var w Webhook
		ok := true
		for j := 0; j+1 < len(en.Content); j += 2 {
			kn, vn := en.Content[j], yamlDeref(en.Content[j+1])
			fk := key + "." + kn.Value
			d.src[fk] = fmt.Sprintf("%s:%d", name, kn.Line)
			switch kn.Value {
			case "url", "secret_env":
				if vn.Kind != yaml.ScalarNode {
					d.fail(fk, yamlSummary(vn), "must be a single value")
					ok = false
				} else if kn.Value == "url" {
					w.URL = yamlScalar(vn)
				} else {
					w.SecretEnv = yamlScalar(vn)
				}
			case "events":
				if l := d.list(fk, vn); l != nil {
					w.Events = l
				} else {
					ok = false
				}
			case "secret":
				d.fail(fk, "...", "a secret in the config file is refused: put it in an environment variable and name it in secret_env")
				ok = false
			default:
				d.fail(fk, yamlSummary(vn), "unknown key: use url, secret_env, events")
				ok = false
			}
		}
		if !ok || !d.checkWebhook(key, &w) {
			continue
		}
		if seen[w.URL] {
			d.fail(key+".url", redactURL(w.URL), "endpoint given twice")
			continue
		}
		seen[w.URL] = true
		w.ID = EndpointID(w.URL)
		d.webhooks = append(d.webhooks, w)
	}
}

// checkWebhook checks one endpoint, reporting each problem.
func (d *decoder) checkWebhook(key string, w *Webhook) bool {
	ok := true
	fail := func(k, v, reason string) {
		d.fail(k, v, reason)
		ok = false
	}
	u, err := url.Parse(w.URL)
	switch {
	case w.URL == "":
		fail(key+".url", w.URL, "must be set")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		fail(key+".url", redactURL(w.URL), "must be an https:// URL with a host")
	case u.User != nil:
		fail(key+".url", redactURL(w.URL), "must not hold credentials: the signature authenticates the sender")
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		fail(key+".url", w.URL, "http:// is only allowed to a loopback address (tests); use https://")
	}
	switch {
	case w.SecretEnv == "":
		fail(key+".secret_env", w.SecretEnv, "must name the environment variable holding the endpoint's secret (whsec_...)")
	case !envNameRE.MatchString(w.SecretEnv):
		fail(key+".secret_env", w.SecretEnv, "must be the name of an environment variable (A-Z a-z 0-9 _), not the secret")
	case d.getenv(w.SecretEnv) == "":
		fail(key+".secret_env", w.SecretEnv, "the environment variable is not set")
	}
	if len(w.Events) == 0 {
		fail(key+".events", "[]", "must list at least one of "+strings.Join(EventTypes, ", "))
	}
	seen := map[string]bool{}
	for _, e := range w.Events {
		switch {
		case !slices.Contains(EventTypes, e):
			fail(key+".events", listValue(w.Events), fmt.Sprintf("unknown event %q: use %s", e, strings.Join(EventTypes, ", ")))
		case seen[e]:
			fail(key+".events", listValue(w.Events), fmt.Sprintf("%q given twice", e))
		}
		seen[e] = true
	}
	return ok
}

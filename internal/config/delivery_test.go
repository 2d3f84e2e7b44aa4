package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDelivery(t *testing.T) {
	env := []string{"SMTP_PW=pw", "HOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	c, err := Parse([]byte(`
delivery:
  email: {host: smtp.example.com, port: 465, tls: tls, username: u, password_env: SMTP_PW,
          from: "Billing <billing@example.com>", bcc: [archive@example.com], attach: [pdf, csv]}
  webhooks:
    - {url: "https://books.example.com/hook", secret_env: HOOK_SECRET, events: [statement.final, month.closed]}
    - {url: "http://127.0.0.1:9999/h", secret_env: HOOK_SECRET, events: [period.delivered]}
`), "config.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Delivery.Email
	if !e.Enabled() || e.Port != 465 || e.TLS != TLSImplicit || len(e.Attach) != 2 || e.Drafts {
		t.Errorf("email: %+v", e)
	}
	if p, err := e.Password(func(k string) string { return map[string]string{"SMTP_PW": "pw"}[k] }); p != "pw" || err != nil {
		t.Errorf("password %q, %v", p, err)
	}
	if len(c.Delivery.Webhooks) != 2 || c.Delivery.Webhooks[0].ID != EndpointID("https://books.example.com/hook") ||
		!c.Delivery.Webhooks[1].Wants("period.delivered") || c.Delivery.Webhooks[1].Wants("month.closed") {
		t.Errorf("webhooks: %+v", c.Delivery.Webhooks)
	}
	d := Default()
	if d.Delivery.Email.Enabled() || d.Delivery.Email.TLS != TLSStartTLS || d.Delivery.Email.Port != 587 || d.Delivery.Webhooks == nil {
		t.Errorf("defaults: %+v", d.Delivery)
	}

	for _, tt := range []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"password in file", `delivery: {email: {password: hunter2}}`, nil, `delivery.email.password "..."`},
		{"password in env", ``, []string{"REPORTJOB_DELIVERY_EMAIL_PASSWORD=hunter2"}, `REPORTJOB_DELIVERY_EMAIL_PASSWORD "..."`},
		{"none to a remote host", `delivery: {email: {host: smtp.example.com, tls: none, from: a@b.c}}`, nil, `delivery.email.tls "none"`},
		{"none to loopback", `delivery: {email: {host: 127.0.0.1, tls: none, from: a@b.c}}`, nil, ""},
		{"bad tls", `delivery: {email: {tls: ssl}}`, nil, `delivery.email.tls "ssl"`},
		{"no from", `delivery: {email: {host: smtp.example.com}}`, nil, `delivery.email.from ""`},
		{"bad from", `delivery: {email: {host: smtp.example.com, from: nobody}}`, nil, `delivery.email.from "nobody"`},
		{"unset password env", `delivery: {email: {host: h, from: a@b.c, username: u, password_env: NOPE}}`, nil, `delivery.email.password_env "NOPE"`},
		{"password as env name", `delivery: {email: {password_env: "pa ss"}}`, nil, `delivery.email.password_env "pa ss"`},
		{"user without password", `delivery: {email: {host: h, from: a@b.c, username: u}}`, nil, `delivery.email.username "u"`},
		{"bad attach", `delivery: {email: {attach: [xls]}}`, nil, `delivery.email.attach "[xls]"`},
		{"bad bcc", `delivery: {email: {bcc: [x]}}`, nil, `delivery.email.bcc "[x]"`},
		{"http to remote", `delivery: {webhooks: [{url: "http://books.example.com/h", secret_env: S, events: [month.closed]}]}`, []string{"S=x"}, `delivery.webhooks[0].url "http://books.example.com/h"`},
		{"secret in file", `delivery: {webhooks: [{url: "https://b.example.com/h", secret: whsec_x, events: [month.closed]}]}`, nil, `delivery.webhooks[0].secret "..."`},
		{"unset secret", `delivery: {webhooks: [{url: "https://b.example.com/h", secret_env: S, events: [month.closed]}]}`, nil, `delivery.webhooks[0].secret_env "S"`},
		{"unknown event", `delivery: {webhooks: [{url: "https://b.example.com/h", secret_env: S, events: [invoice.paid]}]}`, []string{"S=x"}, `delivery.webhooks[0].events "[invoice.paid]"`},
		{"no events", `delivery: {webhooks: [{url: "https://b.example.com/h", secret_env: S}]}`, []string{"S=x"}, `delivery.webhooks[0].events "[]"`},
		{"twice", `delivery: {webhooks: [{url: "https://b.example.com/h", secret_env: S, events: [month.closed]}, {url: "https://b.example.com/h", secret_env: S, events: [month.closed]}]}`, []string{"S=x"}, `delivery.webhooks[1].url`},
		{"since", `delivery: {since: "2026-11"}`, nil, ""},
		{"since not a month", `delivery: {since: "2026-1"}`, nil, `delivery.since "2026-1" (config.yaml:1): must be a statement month YYYY-MM`},
		{"since a day", `delivery: {since: "2026-11-01"}`, nil, `delivery.since "2026-11-01"`},
		{"since month 13", ``, []string{"REPORTJOB_DELIVERY_SINCE=2026-13"}, `delivery.since "2026-13"`},
		{"webhooks from env", ``, []string{"REPORTJOB_DELIVERY_WEBHOOKS=x"}, `REPORTJOB_DELIVERY_WEBHOOKS`},
	} {
		_, err := Parse([]byte(tt.yaml), "config.yaml", tt.env)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one with %s", tt.name, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the password is echoed: %v", tt.name, err)
		}
	}
}

func TestDeliveryPasswordFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "smtp.pw"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	c, err := Parse([]byte(`delivery: {email: {host: smtp.example.com, from: a@example.com, username: u, password_file: smtp.pw}}`), cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Delivery.Email.PasswordFile != filepath.Join(dir, "smtp.pw") {
		t.Errorf("password_file %q: want it resolved against the config's folder", c.Delivery.Email.PasswordFile)
	}
	if pw, err := c.Delivery.Email.Password(func(string) string { return "" }); pw != "s3cret" || err != nil {
		t.Errorf("Password() = %q, %v", pw, err)
	}
	if _, err := Parse([]byte(`delivery: {email: {password_env: P, password_file: f}}`), cfgFile, []string{"P=x"}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both: %v", err)
	}
}

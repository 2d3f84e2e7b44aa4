package config

import (
	"strings"
	"testing"
)

// TestConfigErrorsHideCredentials is the regression test of a leak the
// security suite found: a bad metrics.pushgateway_url (or a REPORTJOB_*
// variable with a typo in its name) was echoed in full in the config
// error, which the CLI prints on stderr and in its summary line, password
// included.
func TestConfigErrorsHideCredentials(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, tt := range []struct {
		name, yaml string
		env        []string
		shown      string // what the message still shows, to find the value
	}{
		{"bad scheme", "metrics: {pushgateway_url: 'ftp://user:" + secret + "@gw:9091'}", nil, "ftp://xxxxx@gw:9091"},
		{"no host", "metrics: {pushgateway_url: 'http://user:" + secret + "@'}", nil, "http://xxxxx@"},
		{"does not parse", "metrics: {pushgateway_url: 'http://user:" + secret + "@gw:port'}", nil, "http://xxxxx@gw:port"},
		{"space", "", []string{"REPORTJOB_METRICS_PUSHGATEWAY_URL=http://us er:" + secret + "@gw"}, "xxxxx@gw"},
		{"endpoint", "sink: {s3: {endpoint: 's3://key:" + secret + "@host'}}", nil, "s3://xxxxx@host"},
		{"typo in the name", "", []string{"REPORTJOB_METRICS_PUSHGATEWAY_UR=http://user:" + secret + "@gw:9091"}, "REPORTJOB_METRICS_PUSHGATEWAY_UR"},
	} {
		_, err := Parse([]byte(tt.yaml), "config.yaml", tt.env)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, tt.shown) {
			t.Errorf("%s: message %q: want %q shown and the password hidden", tt.name, msg, tt.shown)
		}
	}
	// A good URL is kept as given: the metrics package sends the
	// credentials as basic auth and keeps them out of its own errors.
	c, err := Parse([]byte("metrics: {pushgateway_url: 'https://user:"+secret+"@gw:9091'}"), "config.yaml", nil)
	if err != nil || c.Metrics.PushgatewayURL != "https://user:"+secret+"@gw:9091" {
		t.Errorf("good URL with credentials: %v, %q", err, c.Metrics.PushgatewayURL)
	}
}

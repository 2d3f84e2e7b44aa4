package config

import (
	"strings"
	"testing"
)

// TestConfigRatePercent: a rate written as a percentage or a fraction is
// refused with the basis points it likely means.
func TestConfigRatePercent(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"commission: {agencies: {acme-travel: 12%}}",
			`config: commission.agencies[acme-travel] "12%" (config.yaml:1): must be basis points, an integer between 0 and 10000 (100 = 1 %): 12% is 1200`},
		{"commission: {default_bps: 12.5%}",
			`config: commission.default_bps "12.5%" (config.yaml:1): must be basis points, an integer between 0 and 10000 (100 = 1 %): 12.5% is 1250`},
		{"commission: {agencies: {a: 0.12}}",
			`config: commission.agencies[a] "0.12" (config.yaml:1): must be basis points, an integer between 0 and 10000 (100 = 1 %): if 0.12 means 12 %, write 1200`},
		{"commission: {agencies: {a: [{bps: 11%, from: 2026-12-01}]}}",
			`config: commission.agencies[a][0].bps "11%": must be basis points, an integer between 0 and 10000 (100 = 1 %): 11% is 1100`},
		{"commission: {agencies: {a: 12x}}",
			`config: commission.agencies[a] "12x" (config.yaml:1): must be an integer`},
	} {
		_, err := Parse([]byte(tc.yaml), "config.yaml", nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
	_, err := Parse(nil, "", []string{"REPORTJOB_COMMISSION_DEFAULT_BPS=10%"})
	if want := "10% is 1000"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("REPORTJOB_COMMISSION_DEFAULT_BPS=10%%: %v, want %q", err, want)
	}
}

package config

import (
	"fmt"
	"math/big"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/reportjob/reportjob/internal/pricing"
)

// defaultBPSKey takes an integer (viper, or the environment) or, in the
// file only, a list of dated rates (read from the raw YAML).
const defaultBPSKey = "commission.default_bps"

// rateWant is what a rate value must be, for messages.
const rateWant = "must be an integer between 0 and 10000 (basis points), or a list of rates " +
	`such as [{bps: 1200}, {bps: 1100, from: "2026-12-01"}]`

// schedule reads the rates of key (commission.default_bps or
// commission.agencies[X]): an integer, one rate from the start; or a
// list of {bps, from}, from being RFC 3339 or YYYY-MM-DD (UTC) and
// compared with a transaction's recorded_at. In a list only the first
// rate may have no from (it applies from the start), the from dates
// increase strictly, and every bps is 0..10000. fromStart requires the
// first rate to apply from the start (the default, which has nothing to
// fall back on; an agency's rates fall back on the default before its
// first from). ok is false when an error was reported.
func (d *decoder) schedule(key string, n *yaml.Node, fromStart bool) (pricing.Schedule, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		bps, ok := d.bps(key, yamlScalar(n))
		return pricing.Schedule{{BPS: int32(bps)}}, ok
	case yaml.SequenceNode:
	default:
		d.fail(key, yamlSummary(n), rateWant)
		return nil, false
	}
	if len(n.Content) == 0 {
		d.fail(key, "[]", "must list at least one rate")
		return nil, false
	}
	var s pricing.Schedule
	ok := true
	for i, e := range n.Content {
		ekey := fmt.Sprintf("%s[%d]", key, i)
		r, eok := d.rate(ekey, yamlDeref(e))
		if !eok {
			ok = false
			continue
		}
		switch {
		case r.From.IsZero() && i > 0:
			d.fail(ekey+".from", "", "only the first rate may have no from date (it applies from the start)")
			ok = false
		case !r.From.IsZero() && i == 0 && fromStart:
			d.fail(ekey+".from", r.From.Format("2006-01-02T15:04:05.999999999Z07:00"),
				"the first default rate applies from the start: give it no from date")
			ok = false
		case len(s) > 0 && !r.From.After(s[len(s)-1].From):
			d.fail(ekey+".from", r.From.Format("2006-01-02T15:04:05.999999999Z07:00"),
				"from dates must increase: each after the one before, none twice")
			ok = false
		}
		s = append(s, r)
	}
	return s, ok
}

// rate reads one {bps, from} mapping of a list of rates.
func (d *decoder) rate(key string, n *yaml.Node) (pricing.Rate, bool) {
	var r pricing.Rate
	if n.Kind != yaml.MappingNode {
		d.fail(key, yamlSummary(n), `must be a mapping such as {bps: 1100, from: "2026-12-01"}`)
		return r, false
	}
	ok, hasBPS := true, false
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := yamlDeref(n.Content[i]), yamlDeref(n.Content[i+1])
		fkey := key + "." + kn.Value
		if seen[kn.Value] {
			d.fail(fkey, yamlSummary(vn), "key given twice")
			ok = false
			continue
		}
		seen[kn.Value] = true
		if vn.Kind != yaml.ScalarNode && (kn.Value == "bps" || kn.Value == "from") {
			d.fail(fkey, yamlSummary(vn), "must be a single value")
			ok = false
			continue
		}
		switch kn.Value {
		case "bps":
			bps, bok := d.bps(fkey, yamlScalar(vn))
			r.BPS, hasBPS, ok = int32(bps), bok, ok && bok
		case "from":
			t, err := ParseInstant(strings.TrimSpace(yamlScalar(vn)))
			if err != nil {
				d.fail(fkey, yamlScalar(vn), "must be RFC 3339 (2026-12-01T00:00:00Z) or YYYY-MM-DD (UTC), in the years 1000 to 9999")
				ok = false
				continue
			}
			r.From = t
		default:
			d.fail(fkey, yamlSummary(vn), "unknown key: a rate has bps and, optionally, from")
			ok = false
		}
	}
	if !hasBPS && !seen["bps"] {
		d.fail(key+".bps", "", "missing: every rate needs bps")
		ok = false
	}
	return r, ok
}

// bps reads a commission rate in basis points (0..10000). A percentage
// ("12%") or a fraction ("0.12") is refused with the basis points it
// likely means.
func (d *decoder) bps(key, s string) (int, bool) {
	if hint := percentHint(strings.TrimSpace(s)); hint != "" {
		d.fail(key, s, "must be basis points, an integer between 0 and 10000 (100 = 1 %): "+hint)
		return 0, false
	}
	return d.intIn(key, s, 0, pricing.MaxBPS)
}

// percentHint returns, for a value written as a percentage or as a
// fraction, the basis points it stands for ("12% is 1200"), or "". The
// arithmetic is exact (big.Rat): 12.5% is 1250, 0.125 is 1250.
func percentHint(s string) string {
	num, pct := strings.CutSuffix(s, "%")
	num = strings.TrimSpace(num)
	r, ok := new(big.Rat).SetString(num)
	if !ok || r.Sign() < 0 || strings.ContainsAny(num, "/eE") {
		return ""
	}
	if pct {
		return fmt.Sprintf("%s is %s", s, ratString(r.Mul(r, big.NewRat(100, 1))))
	}
	if !strings.Contains(num, ".") || r.Cmp(big.NewRat(1, 1)) >= 0 {
		return ""
	}
	bps := new(big.Rat).Mul(r, big.NewRat(10000, 1))
	return fmt.Sprintf("if %s means %s %%, write %s", s, ratString(new(big.Rat).Mul(r, big.NewRat(100, 1))), ratString(bps))
}

// ratString prints r as an integer when it is one, else with 2 decimals.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(2)
}

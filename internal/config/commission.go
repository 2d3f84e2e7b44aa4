package config

import (
	"fmt"
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
		bps, ok := d.intIn(key, yamlScalar(n), 0, pricing.MaxBPS)
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
			bps, bok := d.intIn(fkey, yamlScalar(vn), 0, pricing.MaxBPS)
			r.BPS, hasBPS, ok = int32(bps), bok, ok && bok
		case "from":
			t, err := ParseInstant(strings.TrimSpace(yamlScalar(vn)))
			if err != nil {
				d.fail(fkey, yamlScalar(vn), "must be RFC 3339 (2026-12-01T00:00:00Z) or YYYY-MM-DD (UTC)")
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

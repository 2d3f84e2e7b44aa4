package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// agencyFileFormats is every per-agency deliverable of report.agency_files.
var agencyFileFormats = []string{"csv", "parquet"}

func (d *decoder) decodeReport(c *Config) {
	r := &c.Report
	names := make([]string, len(Periods))
	for i, p := range Periods {
		names[i] = formatDuration(p)
	}
	// A period is a duration: "60m" is 1h and "1440m" and "1d" are 24h.
	s := d.str("report.period")
	if p, err := ParseDuration(s); err == nil && slices.Contains(Periods, p) {
		r.Period = p
	} else {
		d.fail("report.period", s, "must be one of "+strings.Join(names, ", "))
	}
	s = d.str("report.lateness")
	switch l, err := ParseDuration(s); {
	case err != nil:
		d.fail("report.lateness", s, "must be a duration such as 2m or 90s")
	case l < 0 || l >= maxLateness:
		d.fail("report.lateness", s, "must be at least 0 and less than 24h")
	default:
		r.Lateness = l
	}
	if s := d.str("report.start"); s != "" {
		t, err := ParseInstant(s)
		switch {
		case err != nil:
			d.fail("report.start", s, "must be RFC 3339 (2024-01-01T00:00:00Z) or YYYY-MM-DD (UTC), in the years 1000 to 9999")
		case r.Period != 0 && !periodStart(t, r.Period).Equal(t):
			d.fail("report.start", s, fmt.Sprintf("must be a %s period boundary (UTC midnight + k*%s), such as %s",
				formatDuration(r.Period), formatDuration(r.Period), periodStart(t, r.Period).Format(time.RFC3339)))
		default:
			r.Start = t
		}
	}
	r.LineItems = d.bool("report.line_items")
	r.AgencyFiles = d.agencyFiles()
	r.RecheckAfter = d.recheckAfter(r.Period)
	s = d.str("report.dedupe_window")
	switch w, err := ParseDuration(s); {
	case err != nil:
		d.fail("report.dedupe_window", s, "must be a duration such as 35d or 36h (0 = within a period only)")
	case w < 0 || w > maxDelay:
		d.fail("report.dedupe_window", s, "must be between 0 and "+formatDays(maxDelay))
	default:
		r.DedupeWindow = w
	}
	r.MaxPeriodsPerRun = d.int("report.max_periods_per_run", 1, math.MaxInt)
	r.Concurrency = d.int("report.concurrency", 1, maxConcurrency)
	s = d.str("report.lease_ttl")
	switch l, err := ParseDuration(s); {
	case err != nil:
		d.fail("report.lease_ttl", s, "must be a duration such as 2m or 30s")
	case l < minLeaseTTL || l > maxLeaseTTL:
		d.fail("report.lease_ttl", s, "must be between "+formatDuration(minLeaseTTL)+" and "+formatDuration(maxLeaseTTL))
	default:
		r.LeaseTTL = l
	}
}

// listValue writes a list as it appears in messages: [csv, parquet].
func listValue(l []string) string { return "[" + strings.Join(l, ", ") + "]" }

// agencyFiles checks report.agency_files: csv and/or parquet, each once.
func (d *decoder) agencyFiles() []string { return d.formats("report.agency_files", agencyFileFormats) }

// recheckAfter checks report.recheck_after against the report period p
// (0 when that is invalid) and returns it sorted, without duplicates.
func (d *decoder) recheckAfter(p time.Duration) []time.Duration {
	const key = "report.recheck_after"
	l := d.strs(key)
	out := []time.Duration{}
	for _, s := range l {
		v, err := ParseDuration(s)
		switch {
		case err != nil:
			d.fail(key, listValue(l), fmt.Sprintf("%q is not a duration such as 1h, 6h or 2d", s))
			return []time.Duration{}
		case v <= 0:
			d.fail(key, listValue(l), fmt.Sprintf("%q: each delay must be more than 0 (use [] for no rechecks)", s))
			return []time.Duration{}
		case v > maxDelay:
			d.fail(key, listValue(l), fmt.Sprintf("%q: each delay must be at most %s", s, formatDays(maxDelay)))
			return []time.Duration{}
		}
		out = append(out, v)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if n := len(out); n > 0 && p > 0 && out[n-1]/p > maxRecheckSpan {
		d.fail(key, listValue(l), fmt.Sprintf("the longest delay, %s, spans %d periods of %s: at most %d, since the state keeps one recheck entry per period in that span",
			formatDays(out[n-1]), out[n-1]/p, formatDuration(p), maxRecheckSpan))
		return []time.Duration{}
	}
	return out
}

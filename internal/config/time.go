package config

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Periods is every allowed report.period, shortest first: each divides a
// UTC day evenly, so periods are aligned to UTC midnight.
var Periods = []time.Duration{
	15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour,
	4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// ErrBadDuration is wrapped by every ParseDuration error.
var ErrBadDuration = errors.New("bad duration")

// ParseDuration parses a duration in Go's syntax (time.ParseDuration:
// "90m", "36h", "1h30m", "1.5h", "-2m", "0") plus the unit "d" for days of
// 24 hours: "35d", "1d12h", "1.5d" (36h). Like Go's, it accepts negative
// values; the caller decides whether they are allowed. Errors wrap
// ErrBadDuration and name the text.
func ParseDuration(s string) (time.Duration, error) {
	bad := func(reason string) (time.Duration, error) {
		return 0, fmt.Errorf("duration %q: %s: %w", s, reason, ErrBadDuration)
	}
	const syntax = "want a number and a unit, such as 90m, 36h, 35d or 1d12h (units ns, us, ms, s, m, h, d)"
	if !strings.Contains(s, "d") {
		v, err := time.ParseDuration(s)
		if err != nil {
			return bad(syntax)
		}
		return v, nil
	}
	rest := s
	neg := false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	if rest == "" {
		return bad(syntax)
	}
	var total time.Duration
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return !isNumberRune(r) })
		if i <= 0 {
			return bad(syntax) // no number, or a number without a unit
		}
		j := strings.IndexFunc(rest[i:], isNumberRune)
		if j < 0 {
			j = len(rest) - i
		}
		num, unit := rest[:i], rest[i:i+j]
		rest = rest[i+j:]
		var part time.Duration
		if unit == "d" {
			h, err := time.ParseDuration(num + "h")
			if err != nil {
				return bad(syntax)
			}
			if h > math.MaxInt64/24 {
				return bad("out of range")
			}
			part = 24 * h
		} else {
			var err error
			if part, err = time.ParseDuration(num + unit); err != nil {
				return bad(syntax)
			}
		}
		if total > math.MaxInt64-part {
			return bad("out of range")
		}
		total += part
	}
	if neg {
		total = -total
	}
	return total, nil
}

func isNumberRune(r rune) bool { return '0' <= r && r <= '9' || r == '.' }

// ParseInstant parses a time given as RFC 3339 (any offset) or YYYY-MM-DD
// (midnight UTC), returned in UTC; report.start, the commission rates'
// dates and the --from, --to and --now flags use it.
//
// The instant must fall in the years MinInstantYear to MaxInstantYear
// (UTC): the job takes the zero time (0001-01-01T00:00:00Z) for "not set"
// (no checkpoint, no --from), so a period starting there, or before,
// could be delivered but never found again (a backfill from year 0 left
// a month of statements whose period had no manifest, and every later
// run failed on it).
func ParseInstant(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return time.Time{}, fmt.Errorf("time %q: want RFC 3339 or YYYY-MM-DD", s)
		}
		t = t.UTC()
	}
	if y := t.Year(); y < MinInstantYear || y > MaxInstantYear {
		return time.Time{}, fmt.Errorf("time %q: year %d in UTC, want %d to %d", s, y, MinInstantYear, MaxInstantYear)
	}
	return t, nil
}

// The years ParseInstant accepts.
const (
	MinInstantYear = 1000
	MaxInstantYear = 9999
)

// formatDuration writes d as people write periods: 1h, 15m, 2m30s, 24h
// (time.Duration.String gives 1h0m0s).
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "h0m0s") {
		return strings.TrimSuffix(s, "0m0s")
	}
	return strings.TrimSuffix(s, "0s")
}

// formatDays is formatDuration, but whole days as days: 35d, 400d.
func formatDays(d time.Duration) string {
	if d > 0 && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return formatDuration(d)
}

// periodStart returns the start of the period of length d (one of
// Periods) that holds t: periods are aligned to UTC midnight.
func periodStart(t time.Time, d time.Duration) time.Time {
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return midnight.Add(t.Sub(midnight) / d * d)
}

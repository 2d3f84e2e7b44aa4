package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// statementFileFormats is every per-agency statement file of
// statements.agency_files.
var statementFileFormats = []string{"pdf", "csv", "parquet"}

// maxCloseAfter bounds statements.close_after.
const maxCloseAfter = 60 * day

// Statements is statements.*: the monthly close (docs/statements.md, Monthly
// statements).
type Statements struct {
	// Timezone names the zone months are counted in; Location is it
	// loaded.
	Timezone string
	Location *time.Location
	// CloseAfter is how long after the month's end a draft becomes
	// final (once the month's rechecks are done).
	CloseAfter time.Duration
	// AgencyFiles is the per-agency statement files, "pdf", "csv" and/or
	// "parquet", in the order given, never nil; empty for none.
	AgencyFiles []string
	// Directory is statements.directory, the agency directory (package
	// directory reads it at the close): "" for none, s3://BUCKET/KEY, or a
	// local path, resolved against the config file's folder and checked
	// to exist (not parsed) at load. It ends in .csv, .yaml or .yml.
	Directory string
	// Issuer is statements.issuer: who issues the statements.
	Issuer Issuer
	// Fonts is statements.fonts: font files for the scripts the built-in
	// fonts lack, each resolved and checked to exist; never nil.
	Fonts []string
}

// Issuer is statements.issuer. Text fields hold no control character
// (PaymentInstructions may hold line breaks); "" is not printed.
type Issuer struct {
	LegalName string
	// Address is the address lines, never nil.
	Address        []string
	TaxID, Contact string
	// PaymentTermsDays is the default payment terms (an agency's own, in
	// the directory, win): the due date is the issue date + these days.
	PaymentTermsDays    int
	PaymentInstructions string
	// Logo is a PNG file, resolved and checked (it exists and starts with
	// the PNG signature); "" for none.
	Logo string
	// NumberPrefix starts every statement number: statements.issuer.number_prefix,
	// else job_name with every character other than A-Z a-z 0-9 - made
	// "-" and cut to 32. 1 to 32 of A-Z a-z 0-9 -.
	NumberPrefix string
}

func (d *decoder) decodeStatements(c *Config) {
	s := &c.Statements
	s.Timezone = orDefault(d.str("statements.timezone"), "UTC")
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil || s.Timezone == "Local" {
		d.fail("statements.timezone", s.Timezone, "must be an IANA time zone name such as UTC or Europe/Paris")
	} else {
		s.Location = loc
		if p := c.Report.Period; p > 0 {
			if bad, ok := MonthsMisaligned(loc, p); ok {
				d.fail("statements.timezone", s.Timezone, fmt.Sprintf(
					"its month boundaries are not %s period boundaries (the month starting %s is at %s UTC): "+
						"a statement must cover whole periods; use a period that divides the zone's offset from UTC "+
						"(e.g. report.period: 1h for a whole-hour zone, 30m or 15m for a half-hour one), or another zone",
					formatDuration(p), bad.In(loc).Format("2006-01-02"), bad.UTC().Format("15:04")))
			}
		}
	}
	v := d.str("statements.close_after")
	switch ca, err := ParseDuration(v); {
	case err != nil:
		d.fail("statements.close_after", v, "must be a duration such as 3d or 36h")
	case ca < 0 || ca > maxCloseAfter:
		d.fail("statements.close_after", v, "must be between 0 and "+formatDays(maxCloseAfter))
	default:
		s.CloseAfter = ca
	}
	s.AgencyFiles = d.formats("statements.agency_files", statementFileFormats)
	s.Directory = d.directory()
	d.decodeIssuer(c)
	s.Fonts = d.strs("statements.fonts")
}

// MonthsMisaligned reports the first month start in loc, from 2020 to
// 2200, that is not a boundary of periods of length p aligned to UTC
// midnight (ok false when every one is).
func MonthsMisaligned(loc *time.Location, p time.Duration) (bad time.Time, ok bool) {
	for y := 2020; y < 2200; y++ {
		for m := time.January; m <= time.December; m++ {
			t := time.Date(y, m, 1, 0, 0, 0, 0, loc)
			if t.UTC().Truncate(p) != t.UTC() {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// formats checks a list of file formats: each of allowed, each once.
func (d *decoder) formats(key string, allowed []string) []string {
	l := d.strs(key)
	out := []string{}
	for _, f := range l {
		switch {
		case !slices.Contains(allowed, f):
			d.fail(key, listValue(l), fmt.Sprintf("unknown format %q: use %s, or [] for none", f, strings.Join(allowed, ", ")))
			return []string{}
		case slices.Contains(out, f):
			d.fail(key, listValue(l), fmt.Sprintf("%q given twice", f))
			return []string{}
		}
		out = append(out, f)
	}
	return out
}

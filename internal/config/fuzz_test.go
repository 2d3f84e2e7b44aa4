package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/pricing"
)

// FuzzParse: any file and environment give either a configuration whose
// every value is within its documented range, or errors that are all
// *Error with a reason (and, for a value, its key). Never a panic, never a
// bad value let through, never a sink outside its folder or prefix.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"../../config.yaml"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, "")
		}
	}
	if files, err := filepath.Glob("testdata/config/*.yaml"); err == nil {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b, "")
			}
		}
	}
	for _, s := range []struct{ yaml, env string }{
		{"report: {period: 1d, lateness: 0, recheck_after: [1h, 2d, 1h], dedupe_window: 0}", ""},
		{"report: {period: 7m}", "REPORTJOB_REPORT_PERIOD=15m"},
		{"sink: {url: s3://bucket/a/../b}", ""},
		{"sink: {url: 's3://bucket//'}", ""},
		{"sink: {url: file://}", ""},
		{"sink: {url: \"file://x\\0y\"}", ""},
		{"commission: {agencies: {acme: 1200, \"a\\tb\": 5, acme2: 10001}}", ""},
		{"a: &x [*x]", ""},
		{"report: &r {period: *r}", ""},
		{"schedule: {cron: '@every 0s', timezone: ../../etc/passwd}", ""},
		{"schedule: {cron: 'CRON_TZ=UTC * * * * *'}", ""},
		{"metrics: {pushgateway_url: 'http://user:secret@host:9091'}", ""},
		{"report: {recheck_after: 400d, period: 15m}", ""},
		{"---\n---\n", ""},
		{"", "REPORTJOB_REPORT_DEDUPE_WINDOW=9999999999999d\nREPORTJOB_KEYS_SHARDS=0x10\nREPORTJOB_NOPE=1"},
		{"", "REPORTJOB_REPORT_AGENCY_FILES=csv,csv\nREPORTJOB_REPORT_LEASE_TTL=1d"},
		{"report:\n  start: 2028-02-29T01:00:00+01:00\n  period: 24h", ""},
	} {
		f.Add([]byte(s.yaml), s.env)
	}
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		var vars []string
		if env != "" {
			vars = strings.Split(env, "\n")
		}
		c, err := Parse(data, "fuzz.yaml", vars)
		if err != nil {
			checkConfigErrors(t, err)
			return
		}
		checkConfig(t, c)
	})
}

// checkConfigErrors: every error joined in err is a *Error with a reason.
func checkConfigErrors(t *testing.T, err error) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %v (%T) is not a *config.Error", e, e)
		}
		if ce.Reason == "" || !strings.HasPrefix(ce.Error(), "config: ") {
			t.Fatalf("error without a reason: %#v", ce)
		}
		if ce.Key == "" && ce.Source == "" {
			t.Fatalf("error names neither a key nor a source: %#v", ce)
		}
	}
}

// checkConfig checks every value of a parsed configuration against its
// documented range.
func checkConfig(t *testing.T, c *Config) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format, args...)
	}
	if !jobNameRE.MatchString(c.JobName) {
		fail("job_name %q", c.JobName)
	}
	switch c.Store.Backend {
	case "embedded":
		if c.Store.Embedded.Path == "" {
			fail("empty store.embedded.path")
		}
	case "dynamodb":
		if !tableNameRE.MatchString(c.Store.DynamoDB.Table) || !tableNameRE.MatchString(c.Store.DynamoDB.StateTable) {
			fail("tables %q %q", c.Store.DynamoDB.Table, c.Store.DynamoDB.StateTable)
		}
	default:
		fail("store.backend %q", c.Store.Backend)
	}
	if c.Keys.PartitionAttr == "" || c.Keys.SortAttr == "" || c.Keys.PartitionAttr == c.Keys.SortAttr || c.Keys.Shards < 1 || c.Keys.Shards > maxShards {
		fail("keys %+v", c.Keys)
	}
	switch {
	case strings.HasPrefix(c.Sink.URL, "file://"):
		if c.Sink.Dir == "" || c.Sink.Bucket != "" || strings.ContainsFunc(c.Sink.Dir, isControl) {
			fail("file sink %q: dir %q", c.Sink.URL, c.Sink.Dir)
		}
	case strings.HasPrefix(c.Sink.URL, "s3://"):
		if bucketProblem(c.Sink.Bucket) != "" || c.Sink.Dir != "" {
			fail("s3 sink %q: bucket %q", c.Sink.URL, c.Sink.Bucket)
		}
		if p := c.Sink.Prefix; p != "" {
			for seg := range strings.SplitSeq(p, "/") {
				if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, isControl) {
					fail("s3 prefix %q has segment %q", p, seg)
				}
			}
		}
	default:
		fail("sink.url %q", c.Sink.URL)
	}
	if !slices.Contains([]string{"", "AES256", "aws:kms"}, c.Sink.S3.SSE) || c.Sink.S3.KMSKeyID != "" && c.Sink.S3.SSE != "aws:kms" {
		fail("sse %q kms %q", c.Sink.S3.SSE, c.Sink.S3.KMSKeyID)
	}
	r := c.Report
	if !slices.Contains(Periods, r.Period) || r.Lateness < 0 || r.Lateness >= maxLateness {
		fail("period %v lateness %v", r.Period, r.Lateness)
	}
	if !r.Start.IsZero() && (r.Start.Location() != time.UTC || !periodStart(r.Start, r.Period).Equal(r.Start)) {
		fail("start %v is not a UTC boundary of %v", r.Start, r.Period)
	}
	if r.AgencyFiles == nil || len(r.AgencyFiles) > 2 {
		fail("agency_files %q", r.AgencyFiles)
	}
	for i, a := range r.AgencyFiles {
		if !slices.Contains(agencyFileFormats, a) || slices.Contains(r.AgencyFiles[:i], a) {
			fail("agency_files %q", r.AgencyFiles)
		}
	}
	if r.RecheckAfter == nil || !slices.IsSorted(r.RecheckAfter) || len(slices.Compact(slices.Clone(r.RecheckAfter))) != len(r.RecheckAfter) {
		fail("recheck_after %v", r.RecheckAfter)
	}
	for _, d := range r.RecheckAfter {
		if d <= 0 || d > maxDelay || d/r.Period > maxRecheckSpan {
			fail("recheck_after %v", r.RecheckAfter)
		}
	}
	if r.DedupeWindow < 0 || r.DedupeWindow > maxDelay || r.MaxPeriodsPerRun < 1 ||
		r.Concurrency < 1 || r.Concurrency > maxConcurrency || r.LeaseTTL < minLeaseTTL || r.LeaseTTL > maxLeaseTTL {
		fail("report %+v", r)
	}
	if c.Schedule.Location == nil || c.Schedule.Timezone == "Local" {
		fail("schedule %+v", c.Schedule)
	}
	if !validSchedule(c.Commission.Default, true) || c.Commission.Agencies == nil {
		fail("commission %+v", c.Commission)
	}
	for id, s := range c.Commission.Agencies {
		if !validSchedule(s, false) || item.AgencyIDProblem(id) != "" || !utf8.ValidString(id) {
			fail("commission.agencies[%q] = %v", id, s)
		}
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) || !slices.Contains([]string{"json", "text"}, c.Log.Format) {
		fail("log %+v", c.Log)
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 }

// validSchedule reports whether s is rates config may give: at least one,
// each 0..10000, only the first undated (and, with fromStart, it must be),
// dates strictly increasing.
func validSchedule(s pricing.Schedule, fromStart bool) bool {
	if len(s) == 0 || fromStart && !s[0].From.IsZero() {
		return false
	}
	for i, r := range s {
		if r.BPS < 0 || r.BPS > pricing.MaxBPS || i > 0 && !r.From.After(s[i-1].From) {
			return false
		}
	}
	return true
}

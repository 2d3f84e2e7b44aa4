package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const day24 = 24 * time.Hour

// TestReportV2Accepted covers the version 2 keys: report.agency_files,
// report.recheck_after, report.dedupe_window, and days in report.lateness.
func TestReportV2Accepted(t *testing.T) {
	files := func(c *Config) any { return c.Report.AgencyFiles }
	rechecks := func(c *Config) any { return c.Report.RecheckAfter }
	window := func(c *Config) any { return c.Report.DedupeWindow }
	tests := []struct {
		name, file string
		env        []string
		get        func(*Config) any
		want       any
	}{
		{"agency_files default", "", nil, files, []string{"csv"}},
		{"agency_files both, in order", "report: {agency_files: [parquet, csv]}", nil, files, []string{"parquet", "csv"}},
		{"agency_files parquet", "report: {agency_files: [parquet]}", nil, files, []string{"parquet"}},
		{"agency_files none", "report: {agency_files: []}", nil, files, []string{}},
		{"agency_files empty string", "report: {agency_files: ''}", nil, files, []string{}},
		{"agency_files null", "report: {agency_files: ~}", nil, files, []string{}},
		{"agency_files comma string", "report: {agency_files: 'csv, parquet'}", nil, files, []string{"csv", "parquet"}},
		{"agency_files env", "", []string{"REPORTJOB_REPORT_AGENCY_FILES=csv,parquet"}, files, []string{"csv", "parquet"}},
		{"agency_files env over file", "report: {agency_files: [csv]}", []string{"REPORTJOB_REPORT_AGENCY_FILES=parquet"}, files, []string{"parquet"}},
		{"agency_files env empty = none", "report: {agency_files: [csv]}", []string{"REPORTJOB_REPORT_AGENCY_FILES="}, files, []string{}},

		{"recheck_after default", "", nil, rechecks, []time.Duration{time.Hour}},
		{"recheck_after sorted, deduplicated", "report: {recheck_after: [1d, 1h, 6h, 60m, 24h]}", nil, rechecks,
			[]time.Duration{time.Hour, 6 * time.Hour, day24}},
		{"recheck_after never", "report: {recheck_after: []}", nil, rechecks, []time.Duration{}},
		{"recheck_after 400d at 1h", "report: {recheck_after: [400d]}", nil, rechecks, []time.Duration{400 * day24}},
		{"recheck_after 10000 periods", "report: {period: 15m, recheck_after: [2500h]}", nil, rechecks, []time.Duration{2500 * time.Hour}},
		{"recheck_after env", "", []string{"REPORTJOB_REPORT_RECHECK_AFTER=6h, 1h,35d"}, rechecks,
			[]time.Duration{time.Hour, 6 * time.Hour, 35 * day24}},
		{"recheck_after env empty = never", "", []string{"REPORTJOB_REPORT_RECHECK_AFTER="}, rechecks, []time.Duration{}},

		{"dedupe_window default", "", nil, window, 35 * day24},
		{"dedupe_window 0", "report: {dedupe_window: 0}", nil, window, time.Duration(0)},
		{"dedupe_window 0d", "report: {dedupe_window: 0d}", nil, window, time.Duration(0)},
		{"dedupe_window hours", "report: {dedupe_window: 36h}", nil, window, 36 * time.Hour},
		{"dedupe_window 400d", "report: {dedupe_window: 400d}", nil, window, 400 * day24},
		{"dedupe_window env", "", []string{"REPORTJOB_REPORT_DEDUPE_WINDOW=1d12h"}, window, 36 * time.Hour},

		{"lateness in days", "report: {lateness: 0d}", nil, func(c *Config) any { return c.Report.Lateness }, time.Duration(0)},
		{"lateness 0.5d", "report: {lateness: 0.5d}", nil, func(c *Config) any { return c.Report.Lateness }, 12 * time.Hour},
		{"lateness env", "", []string{"REPORTJOB_REPORT_LATENESS=90s"}, func(c *Config) any { return c.Report.Lateness }, 90 * time.Second},
		{"period 1d", "report: {period: 1d}", nil, func(c *Config) any { return c.Report.Period }, day24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), "c.yaml", tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.get(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestReportV2Refused(t *testing.T) {
	tests := []struct {
		name, file string
		env        []string
		key        string
		value      string
		reason     string // a substring of the reason
	}{
		{"agency_files unknown", "report: {agency_files: [csv, xlsx]}", nil,
			"report.agency_files", "[csv, xlsx]", `unknown format "xlsx": use csv, parquet, or [] for none`},
		{"agency_files duplicate", "report: {agency_files: [csv, parquet, csv]}", nil,
			"report.agency_files", "[csv, parquet, csv]", `"csv" given twice`},
		{"agency_files case", "report: {agency_files: [CSV]}", nil, "report.agency_files", "[CSV]", `unknown format "CSV"`},
		{"agency_files null item", "report: {agency_files: [csv, ~]}", nil, "report.agency_files", "[csv, ]", `unknown format ""`},
		{"agency_files mapping", "report: {agency_files: {csv: true}}", nil, "report.agency_files", "{...}", "must be a list"},
		{"agency_files env unknown", "", []string{"REPORTJOB_REPORT_AGENCY_FILES=csv,json"},
			"report.agency_files", "[csv, json]", `unknown format "json"`},
		{"agency_files env duplicate", "", []string{"REPORTJOB_REPORT_AGENCY_FILES=parquet,parquet"},
			"report.agency_files", "[parquet, parquet]", "given twice"},

		{"recheck_after zero", "report: {recheck_after: [1h, 0]}", nil, "report.recheck_after", "[1h, 0]", `"0": each delay must be more than 0`},
		{"recheck_after negative", "report: {recheck_after: [-1h]}", nil, "report.recheck_after", "[-1h]", "more than 0"},
		{"recheck_after word", "report: {recheck_after: [hourly]}", nil, "report.recheck_after", "[hourly]", `"hourly" is not a duration`},
		{"recheck_after no unit", "report: {recheck_after: [60]}", nil, "report.recheck_after", "[60]", "not a duration"},
		{"recheck_after 401d", "report: {recheck_after: [1h, 401d]}", nil, "report.recheck_after", "[1h, 401d]", `"401d": each delay must be at most 400d`},
		{"recheck_after too many periods", "report: {period: 15m, recheck_after: [1h, 105d]}", nil,
			"report.recheck_after", "[1h, 105d]", "the longest delay, 105d, spans 10080 periods of 15m: at most 10000"},
		{"recheck_after too many periods, one over", "report: {period: 15m, recheck_after: [2500h15m]}", nil,
			"report.recheck_after", "[2500h15m]", "spans 10001 periods"},
		{"recheck_after nested", "report: {recheck_after: [[1h]]}", nil, "report.recheck_after", "[...]", "list of single values"},
		{"recheck_after env", "", []string{"REPORTJOB_REPORT_RECHECK_AFTER=1h,soon"}, "report.recheck_after", "[1h, soon]", `"soon" is not a duration`},
		{"recheck_after env span", "report: {period: 15m}", []string{"REPORTJOB_REPORT_RECHECK_AFTER=400d"}, "report.recheck_after", "[400d]", "spans 38400 periods"},

		{"dedupe_window negative", "report: {dedupe_window: -1d}", nil, "report.dedupe_window", "-1d", "between 0 and 400d"},
		{"dedupe_window 401d", "report: {dedupe_window: 401d}", nil, "report.dedupe_window", "401d", "between 0 and 400d"},
		{"dedupe_window word", "report: {dedupe_window: month}", nil, "report.dedupe_window", "month", "such as 35d"},
		{"dedupe_window list", "report: {dedupe_window: [35d]}", nil, "report.dedupe_window", "[...]", "single value"},
		{"dedupe_window env", "", []string{"REPORTJOB_REPORT_DEDUPE_WINDOW=35"}, "report.dedupe_window", "35", "such as 35d"},

		{"lateness 1d", "report: {lateness: 1d}", nil, "report.lateness", "1d", "less than 24h"},
		{"lateness env 2d", "", []string{"REPORTJOB_REPORT_LATENESS=2d"}, "report.lateness", "2d", "less than 24h"},
		{"period 2d", "report: {period: 2d}", nil, "report.period", "2d", "one of"},

		{"formats in the file", "report: {formats: [parquet, csv]}", nil, "report.formats", "[...]", formatsRemoved},
		{"formats scalar in the file", "report: {formats: parquet}", nil, "report.formats", "parquet", "report.agency_files"},
		{"formats in the environment", "", []string{"REPORTJOB_REPORT_FORMATS=parquet,csv"},
			"REPORTJOB_REPORT_FORMATS", "parquet,csv", formatsRemoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), "c.yaml", tt.env)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			errs := configErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("want 1 error, got %d: %v", len(errs), err)
			}
			e := errs[0]
			if e.Key != tt.key || e.Value != tt.value || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("got key %q value %q reason %q;\nwant key %q value %q reason containing %q", e.Key, e.Value, e.Reason, tt.key, tt.value, tt.reason)
			}
			if prefix := "config: " + tt.key + " \"" + strings.ReplaceAll(tt.value, `"`, `\"`) + "\""; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q does not start with %s", err, prefix)
			}
		})
	}
}

func TestFormatsRemovedMessage(t *testing.T) {
	path := filepath.Join("testdata", "config", "v1_formats.yaml")
	_, err := Load(path, true, nil)
	want := `config: report.formats "[...]" (` + path + `:5): report.formats no longer exists (configuration version 2): ` +
		`summary/ and transactions/ Parquet are always written (transactions/ when report.line_items is true); ` +
		`per-agency files are chosen with report.agency_files: csv, parquet, or [] for none`
	if err == nil || err.Error() != want {
		t.Errorf("message\n%v\nwant\n%s", err, want)
	}
	_, err = Parse(nil, "", []string{"REPORTJOB_REPORT_FORMATS=parquet"})
	var ce *Error
	if !errors.As(err, &ce) || ce.Source != "environment" || !strings.Contains(err.Error(), "report.agency_files") {
		t.Errorf("env: %v, want a *Error from the environment naming report.agency_files", err)
	}
}

// TestShippedConfigHasEveryKey checks that config.yaml spells out every
// key (with its default: TestConfigDefaults), in the documented order.
func TestShippedConfigHasEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(data), "\n"); strings.Contains(first, "SPEC") || !strings.Contains(first, "docs/reference.md, Configuration reference") {
		t.Errorf("first line %q: want a pointer to docs/reference.md, Configuration reference (and no SPEC section)", first)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			path := strings.TrimPrefix(prefix+"."+n.Content[i].Value, ".")
			if v := n.Content[i+1]; v.Kind == yaml.MappingNode && path != agenciesKey {
				walk(path, v)
				continue
			}
			got = append(got, path)
		}
	}
	walk("", root.Content[0])
	var want []string
	for _, k := range configKeys {
		want = append(want, k.path)
		if k.path == "commission.default_bps" {
			want = append(want, agenciesKey)
		}
		if k.path == "delivery.email.drafts" {
			want = append(want, webhooksKey)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config.yaml keys\n%v\nwant\n%v", got, want)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"35d", 35 * day24, true},
		{"36h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1d12h", 36 * time.Hour, true},
		{"1d12h30m15s", 36*time.Hour + 30*time.Minute + 15*time.Second, true},
		{"12h1d", 36 * time.Hour, true},
		{"1d1d", 2 * day24, true},
		{"0", 0, true},
		{"0d", 0, true},
		{"-0", 0, true},
		{"1.5d", 36 * time.Hour, true}, // like Go's 1.5h
		{".5d", 12 * time.Hour, true},
		{"-1d", -day24, true}, // parsed; every key refuses negatives
		{"+2d", 2 * day24, true},
		{"-1d12h", -36 * time.Hour, true},
		{"400d", 400 * day24, true},
		{"1h30m", 90 * time.Minute, true},
		{"2m30s", 150 * time.Second, true},
		{"1.5h", 90 * time.Minute, true},
		{"1ms", time.Millisecond, true},
		{"1d1us", day24 + time.Microsecond, true},
		{"1d1µs", day24 + time.Microsecond, true},
		{"106751d", 106751 * day24, true},

		{"d", 0, false},
		{"", 0, false},
		{"10x", 0, false},
		{"10", 0, false},
		{"1d10", 0, false},
		{"1 d", 0, false},
		{"1d 2h", 0, false},
		{" 1d", 0, false},
		{"1D", 0, false},
		{"1dd", 0, false},
		{"1day", 0, false},
		{"1d-2h", 0, false},
		{"--1d", 0, false},
		{"-d", 0, false},
		{"-", 0, false},
		{".d", 0, false},
		{"1..5d", 0, false},
		{"106752d", 0, false}, // beyond time.Duration
		{"106751d24h", 0, false},
		{"9999999999999999999d", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if !tt.ok {
			if err == nil || !errors.Is(err, ErrBadDuration) || !strings.Contains(err.Error(), `"`+tt.in+`"`) {
				t.Errorf("ParseDuration(%q) = %v, %v; want an ErrBadDuration naming the text", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	_, err := ParseDuration("10x")
	if want := `duration "10x": want a number and a unit, such as 90m, 36h, 35d or 1d12h (units ns, us, ms, s, m, h, d): bad duration`; err == nil || err.Error() != want {
		t.Errorf("message %v, want %s", err, want)
	}
}

func TestParseDurationMatchesGo(t *testing.T) {
	// Without "d", ParseDuration is time.ParseDuration.
	for _, s := range []string{"0", "1h", "-2m", "1.5h", "300ms", "2h45m", "1h0m0s", "", "1", "h", "1hh", "1h 2m", "9223372036s"} {
		want, werr := time.ParseDuration(s)
		got, err := ParseDuration(s)
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("ParseDuration(%q) = %v, %v; time.ParseDuration %v, %v", s, got, err, want, werr)
		}
	}
}

func TestStatementsTimezone(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"statements: {timezone: Europe/Paris}", ""},
		{"statements: {timezone: Asia/Kolkata}", "month boundaries are not 1h period boundaries"},
		{"report: {period: 30m}\nstatements: {timezone: Asia/Kolkata}", ""},
		{"report: {period: 24h}\nstatements: {timezone: Europe/Paris}", "month boundaries are not 24h period boundaries"},
		{"report: {period: 2h}\nstatements: {timezone: Europe/Paris}", "not 2h period boundaries"},
		{"statements: {timezone: Mars/Base}", "IANA time zone"},
		{"statements: {close_after: 90d}", "between 0 and 60d"},
		{"statements: {agency_files: [pdf, xlsx]}", `unknown format "xlsx"`},
	} {
		_, err := Parse([]byte(tc.file), "c.yaml", nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}

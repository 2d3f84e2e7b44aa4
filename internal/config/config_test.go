package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/pricing"
)

// specDefaults is the documented defaults (docs/reference.md, Configuration
// reference), written out by hand.
func specDefaults() *Config {
	var c Config
	c.JobName = "billing-report"
	c.Store.Backend = "embedded"
	c.Store.Embedded.Path = "./data/reportjob.db"
	c.Store.DynamoDB.Table = "billing_transactions"
	c.Store.DynamoDB.StateTable = "billing_transactions_state"
	c.Store.DynamoDB.Region = "us-east-1"
	c.Keys.PartitionAttr = "quarter_hour_timestamp"
	c.Keys.SortAttr = "random_timestamp"
	c.Keys.Shards = 1
	c.Sink.URL = "file://./reports"
	c.Sink.Dir = "./reports"
	c.Sink.S3.Region = "us-east-1"
	c.Sink.S3.SSE = "AES256"
	c.Report.Period = time.Hour
	c.Report.Lateness = 2 * time.Minute
	c.Report.LineItems = true
	c.Report.AgencyFiles = []string{"csv"}
	c.Report.RecheckAfter = []time.Duration{time.Hour}
	c.Report.DedupeWindow = 35 * 24 * time.Hour
	c.Report.MaxPeriodsPerRun = 96
	c.Report.LeaseTTL = 2 * time.Minute
	c.Report.Concurrency = 8
	c.Schedule.Cron = "*/15 * * * *"
	c.Schedule.Timezone = "UTC"
	c.Schedule.Location = time.UTC
	c.Commission.Default = pricing.Schedule{{BPS: 1000}}
	c.Commission.Agencies = map[string]pricing.Schedule{}
	c.Statements = Statements{Timezone: "UTC", Location: time.UTC, CloseAfter: 3 * 24 * time.Hour, AgencyFiles: []string{"pdf", "csv"},
		Issuer: Issuer{Address: []string{}, PaymentTermsDays: 30, NumberPrefix: "billing-report"}, Fonts: []string{}}
	c.Delivery.Email = Email{Port: 587, TLS: TLSStartTLS, Bcc: []string{}, Attach: []string{"pdf"}}
	c.Delivery.Webhooks = []Webhook{}
	c.Log.Level = "info"
	c.Log.Format = "json"
	return &c
}

func TestConfigDefaults(t *testing.T) {
	if got := Default(); !reflect.DeepEqual(got, specDefaults()) {
		t.Errorf("Default() =\n%+v\nwant the documented defaults\n%+v", got, specDefaults())
	}
	shipped, err := Load("../../config.yaml", true, nil)
	if err != nil {
		t.Fatalf("shipped config.yaml: %v", err)
	}
	want := specDefaults()
	// Its relative paths are relative to its folder, the repository's root.
	want.File, want.Store.Embedded.Path, want.Sink.Dir = "../../config.yaml", "../../data/reportjob.db", "../../reports"
	want.Log.FormatSet = true // it spells out every key
	if !reflect.DeepEqual(shipped, want) {
		t.Errorf("shipped config.yaml =\n%+v\nwant the documented defaults\n%+v", shipped, want)
	}
}

func TestConfigFileMissing(t *testing.T) {
	t.Chdir(t.TempDir())

	c, err := Load("", false, []string{"REPORTJOB_LOG_LEVEL=debug"})
	if err != nil {
		t.Fatalf("implicit ./config.yaml missing: %v", err)
	}
	want := specDefaults()
	want.Log.Level = "debug" // the environment still applies
	if !reflect.DeepEqual(c, want) {
		t.Errorf("implicit missing file: got\n%+v\nwant\n%+v", c, want)
	}

	_, err = Load("nope.yaml", true, nil)
	var ce *Error
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &ce) || ce.Source != "nope.yaml" {
		t.Errorf("explicit missing file: err = %v, want a *Error for nope.yaml wrapping fs.ErrNotExist", err)
	}
	if want := "config: nope.yaml: cannot read: no such file or directory"; err != nil && err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	_, err = Load("", true, nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("explicit ./config.yaml missing: err = %v, want fs.ErrNotExist", err)
	}
}

func TestConfigFullFile(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "config", "dynamodb_s3.yaml"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	var want Config
	want.JobName = "billing.report-eu_1"
	want.Store.Backend = "dynamodb"
	want.File = filepath.Join("testdata", "config", "dynamodb_s3.yaml")
	want.Store.Embedded.Path = filepath.Join("testdata", "config", "unused.db")
	want.Store.DynamoDB.Table, want.Store.DynamoDB.StateTable = "txn", "txn_state"
	want.Store.DynamoDB.Region, want.Store.DynamoDB.Endpoint = "eu-west-1", "http://localhost:8000"
	want.Keys.PartitionAttr, want.Keys.SortAttr, want.Keys.Shards = "pk", "sk", 8
	want.Sink.URL = "s3://billing-reports.example/reports/v1/"
	want.Sink.Bucket, want.Sink.Prefix = "billing-reports.example", "reports/v1"
	want.Sink.S3.Region, want.Sink.S3.Endpoint, want.Sink.S3.PathStyle = "eu-west-1", "https://s3.example:7070", true
	want.Sink.S3.SSE, want.Sink.S3.KMSKeyID = "aws:kms", "alias/reports"
	want.Report.Period = time.Hour // "60m"
	want.Report.Lateness = 90 * time.Second
	want.Report.Start = time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)
	want.Report.AgencyFiles = []string{"parquet", "csv"}
	want.Report.RecheckAfter = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour}
	want.Report.DedupeWindow = 40 * 24 * time.Hour
	want.Report.MaxPeriodsPerRun, want.Report.Concurrency = 24, 16
	want.Report.LeaseTTL = 30 * time.Second
	want.Schedule.Cron, want.Schedule.Timezone, want.Schedule.Location = "@every 15m", "Europe/Paris", paris
	want.Commission.Default = pricing.Schedule{{BPS: 0}}
	want.Commission.Agencies = map[string]pricing.Schedule{}
	want.Statements = Statements{Timezone: "Europe/Paris", Location: paris, CloseAfter: 5 * 24 * time.Hour, AgencyFiles: []string{"csv", "parquet"},
		Issuer: Issuer{Address: []string{}, PaymentTermsDays: 30, NumberPrefix: "billing-report-eu-1"}, Fonts: []string{}}
	want.Delivery.Email = Email{Port: 587, TLS: TLSStartTLS, Bcc: []string{}, Attach: []string{"pdf"}}
	want.Delivery.Webhooks = []Webhook{}
	want.Metrics.PushgatewayURL = "http://pushgateway:9091"
	want.Log.Level, want.Log.Format, want.Log.FormatSet = "debug", "text", true
	if !reflect.DeepEqual(c, &want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, &want)
	}
}

func TestConfigEnvOverrides(t *testing.T) {
	file := "report: {period: 2h, agency_files: [parquet]}\nstore: {dynamodb: {endpoint: 'http://x:1'}}\n"
	tests := []struct {
		name string
		env  []string
		get  func(*Config) any
		want any
	}{
		{"string", []string{"REPORTJOB_SINK_URL=s3://my-bucket/out"},
			func(c *Config) any { return [3]string{c.Sink.URL, c.Sink.Bucket, c.Sink.Prefix} },
			[3]string{"s3://my-bucket/out", "my-bucket", "out"}},
		{"underscore in key name", []string{"REPORTJOB_STORE_DYNAMODB_STATE_TABLE=my_state"},
			func(c *Config) any { return c.Store.DynamoDB.StateTable }, "my_state"},
		{"int", []string{"REPORTJOB_REPORT_MAX_PERIODS_PER_RUN=3"},
			func(c *Config) any { return c.Report.MaxPeriodsPerRun }, 3},
		{"bool", []string{"REPORTJOB_REPORT_LINE_ITEMS=false"},
			func(c *Config) any { return c.Report.LineItems }, false},
		{"duration", []string{"REPORTJOB_REPORT_LATENESS=90s"},
			func(c *Config) any { return c.Report.Lateness }, 90 * time.Second},
		{"duration over file", []string{"REPORTJOB_REPORT_PERIOD=30m"},
			func(c *Config) any { return c.Report.Period }, 30 * time.Minute},
		{"list", []string{"REPORTJOB_REPORT_AGENCY_FILES=csv, parquet"},
			func(c *Config) any { return c.Report.AgencyFiles }, []string{"csv", "parquet"}},
		{"empty value overrides the file", []string{"REPORTJOB_STORE_DYNAMODB_ENDPOINT="},
			func(c *Config) any { return c.Store.DynamoDB.Endpoint }, ""},
		{"time", []string{"REPORTJOB_REPORT_START=2024-01-01"},
			func(c *Config) any { return c.Report.Start }, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"REPORTJOB_CONFIG and other variables ignored", []string{"REPORTJOB_CONFIG=/x.yaml", "HOME=/root", "reportjob_keys_shards=9"},
			func(c *Config) any { return c.Keys.Shards }, 1},
		{"no env: file values", nil,
			func(c *Config) any { return [2]any{c.Report.AgencyFiles, c.Store.DynamoDB.Endpoint} },
			[2]any{[]string{"parquet"}, "http://x:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(file), "c.yaml", tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.get(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigEnvNamesUnique(t *testing.T) {
	seen := map[string]string{}
	for _, k := range configKeys {
		n := EnvName(k.path)
		if other, dup := seen[n]; dup {
			t.Errorf("%s and %s both map to %s", k.path, other, n)
		}
		seen[n] = k.path
	}
	if got := EnvName("report.max_periods_per_run"); got != "REPORTJOB_REPORT_MAX_PERIODS_PER_RUN" {
		t.Errorf("env name = %s", got)
	}
}

func TestConfigAccepted(t *testing.T) {
	tests := []struct {
		file string
		get  func(*Config) any
		want any
	}{
		{"report: {period: 60m}", func(c *Config) any { return c.Report.Period }, time.Hour},
		{"report: {period: 1440m}", func(c *Config) any { return c.Report.Period }, 24 * time.Hour},
		{"report: {lateness: 0}", func(c *Config) any { return c.Report.Lateness }, time.Duration(0)},
		{"report: {period: 2h, start: 2024-02-29T22:00:00Z}", func(c *Config) any { return c.Report.Start },
			time.Date(2024, 2, 29, 22, 0, 0, 0, time.UTC)},
		{"report: {period: 15m, start: '2024-01-01T00:45:00-05:00'}", func(c *Config) any { return c.Report.Start },
			time.Date(2024, 1, 1, 5, 45, 0, 0, time.UTC)},
		{"report: {start: ~}", func(c *Config) any { return c.Report.Start.IsZero() }, true},
		{"report: {agency_files: 'parquet,csv'}", func(c *Config) any { return c.Report.AgencyFiles }, []string{"parquet", "csv"}},
		{"report: {line_items: False}", func(c *Config) any { return c.Report.LineItems }, false},
		{"keys: {shards: '64'}", func(c *Config) any { return c.Keys.Shards }, 64},
		{"sink: {url: s3://bucket}", func(c *Config) any { return c.Sink.Bucket + "|" + c.Sink.Prefix }, "bucket|"},
		{"sink: {url: file:///srv/reports}", func(c *Config) any { return c.Sink.Dir }, "/srv/reports"},
		{"sink: {s3: {sse: ''}}", func(c *Config) any { return c.Sink.S3.SSE }, ""},
		{"schedule: {cron: '@hourly'}", func(c *Config) any { return c.Schedule.Cron }, "@hourly"},
		{"schedule: {timezone: ''}", func(c *Config) any { return c.Schedule.Location }, time.UTC},
		{"store: {backend: dynamodb, embedded: {path: ''}}", func(c *Config) any { return c.Store.Backend }, "dynamodb"},
		{"sink: {s3: {region: &r eu-west-1}}\nstore: {dynamodb: {region: *r}}", // anchors and aliases
			func(c *Config) any { return c.Store.DynamoDB.Region }, "eu-west-1"},
		{"metrics:\nlog:\n", func(c *Config) any { return c.Log.Level }, "info"},
		{"# only a comment\n", func(c *Config) any { return c.JobName }, "billing-report"},
		{"", func(c *Config) any { return c.JobName }, "billing-report"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), "c.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.get(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigAgencies(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "config", "agencies.yaml"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pricing.Schedule{}
	for id, bps := range map[string]int32{"Acme.Travel": 1200, "acme.travel": 900, "Zoë Tours": 0, "123": 50, "a.b.c": 10000} {
		want[id] = pricing.Schedule{{BPS: bps}}
	}
	if !reflect.DeepEqual(c.Commission.Agencies, want) {
		t.Errorf("agencies = %v, want %v", c.Commission.Agencies, want)
	}
	if w := (pricing.Schedule{{BPS: 750}}); !reflect.DeepEqual(c.Commission.Default, w) {
		t.Errorf("default_bps = %v, want %v", c.Commission.Default, w)
	}
}

func TestConfigErrors(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name, file string
		env        []string
		key        string
		reason     string // a substring of the reason
	}{
		{"unknown top key", "jobname: x", nil, "jobname", "did you mean job_name?"},
		{"unknown nested key", "report: {lateneess: 2m}", nil, "report.lateneess", "did you mean report.lateness?"},
		{"unknown deep key", "store: {dynamodb: {tabel: t}}", nil, "store.dynamodb.tabel", "unknown key"},
		{"key case matters", "Report: {period: 1h}", nil, "Report", "did you mean report?"},
		{"merge key", "<<: {job_name: x}", nil, "<<", "unknown key"},
		{"duplicate key", "log: {level: info, level: debug}", nil, "log.level", "twice"},
		{"section not a mapping", "report: 1h", nil, "report", "mapping"},
		{"leaf is a mapping", "job_name: {a: b}", nil, "job_name", "single value"},
		{"leaf is a list", "sink: {url: [a]}", nil, "sink.url", "single value"},
		{"shards word", "keys: {shards: eight}", nil, "keys.shards", "integer"},
		{"shards float", "keys: {shards: 8.0}", nil, "keys.shards", "integer"},
		{"shards 0", "keys: {shards: 0}", nil, "keys.shards", "between 1 and 64"},
		{"shards 65", "keys: {shards: 65}", nil, "keys.shards", "between 1 and 64"},
		{"line_items maybe", "report: {line_items: maybe}", nil, "report.line_items", "true or false"},
		{"path_style yes", "sink: {s3: {path_style: yes}}", nil, "sink.s3.path_style", "true or false"},
		{"lateness words", "report: {lateness: 2 minutes}", nil, "report.lateness", "duration"},
		{"lateness no unit", "report: {lateness: 120}", nil, "report.lateness", "duration"},
		{"lateness negative", "report: {lateness: -1m}", nil, "report.lateness", "less than 24h"},
		{"lateness 24h", "report: {lateness: 24h}", nil, "report.lateness", "less than 24h"},
		{"period 7m", "report: {period: 7m}", nil, "report.period", "one of 15m, 30m, 1h, 2h, 3h, 4h, 6h, 8h, 12h, 24h"},
		{"period 48h", "report: {period: 48h}", nil, "report.period", "one of"},
		{"period empty", "report: {period: }", nil, "report.period", "one of"},
		{"start words", "report: {start: yesterday}", nil, "report.start", "RFC 3339"},
		{"start no zone", "report: {start: '2024-01-01T00:00:00'}", nil, "report.start", "RFC 3339"},
		{"start misaligned", "report: {start: '2024-01-01T00:30:00Z'}", nil, "report.start", "such as 2024-01-01T00:00:00Z"},
		{"start misaligned 2h", "report: {period: 2h, start: '2024-01-01T01:00:00Z'}", nil, "report.start", "2h period boundary"},
		{"start misaligned by offset", "report: {start: '2024-01-01T00:00:00+05:30'}", nil, "report.start", "boundary"},
		{"agency_files mapping", "report: {agency_files: {a: b}}", nil, "report.agency_files", "must be a list"},
		{"agency_files nested list", "report: {agency_files: [[csv]]}", nil, "report.agency_files", "list of single values"},
		{"max_periods_per_run 0", "report: {max_periods_per_run: 0}", nil, "report.max_periods_per_run", "at least 1"},
		{"lease_ttl too short", "report: {lease_ttl: 1s}", nil, "report.lease_ttl", "between 5s and 1h"},
		{"lease_ttl not a duration", "report: {lease_ttl: soon}", nil, "report.lease_ttl", "must be a duration"},
		{"concurrency 0", "report: {concurrency: 0}", nil, "report.concurrency", "between 1 and 64"},
		{"concurrency 65", "report: {concurrency: 65}", nil, "report.concurrency", "between 1 and 64"},
		{"backend", "store: {backend: sqlite}", nil, "store.backend", "embedded, dynamodb"},
		{"embedded path empty", "store: {embedded: {path: ''}}", nil, "store.embedded.path", "empty"},
		{"dynamodb table empty", "store: {backend: dynamodb, dynamodb: {table: ''}}", nil, "store.dynamodb.table", "table name"},
		{"dynamodb state table short", "store: {backend: dynamodb, dynamodb: {state_table: ab}}", nil, "store.dynamodb.state_table", "table name"},
		{"dynamodb endpoint", "store: {dynamodb: {endpoint: 'localhost:8000'}}", nil, "store.dynamodb.endpoint", "http"},
		{"partition_attr empty", "keys: {partition_attr: ''}", nil, "keys.partition_attr", "empty"},
		{"same key attrs", "keys: {partition_attr: pk, sort_attr: pk}", nil, "keys.sort_attr", "differ"},
		{"sink scheme", "sink: {url: 'http://x/y'}", nil, "sink.url", "file://DIR or s3://"},
		{"sink no scheme", "sink: {url: ./reports}", nil, "sink.url", "file://DIR or s3://"},
		{"sink file empty", "sink: {url: 'file://'}", nil, "sink.url", "needs a directory"},
		{"bucket upper case", "sink: {url: 's3://My-Bucket/p'}", nil, "sink.url", "bad bucket name"},
		{"bucket short", "sink: {url: 's3://ab'}", nil, "sink.url", "bad bucket name"},
		{"bucket empty", "sink: {url: 's3:///p'}", nil, "sink.url", "bad bucket name"},
		{"bucket dots", "sink: {url: 's3://my..bucket'}", nil, "sink.url", "adjacent dots"},
		{"bucket ip", "sink: {url: 's3://192.168.1.1/p'}", nil, "sink.url", "IP address"},
		{"bucket prefix xn--", "sink: {url: 's3://xn--bucket'}", nil, "sink.url", "reserved prefix"},
		{"bucket suffix", "sink: {url: 's3://mybucket-s3alias'}", nil, "sink.url", "reserved suffix"},
		{"bucket long", "sink: {url: 's3://" + strings.Repeat("b", 64) + "'}", nil, "sink.url", "bad bucket name"},
		{"s3 prefix empty segment", "sink: {url: 's3://bucket/a//b'}", nil, "sink.url", "segment"},
		{"s3 prefix dotdot", "sink: {url: 's3://bucket/a/../b'}", nil, "sink.url", "segment"},
		{"sse", "sink: {s3: {sse: 'aws:kms:dsse'}}", nil, "sink.s3.sse", `one of , AES256, aws:kms`},
		{"kms key without kms", "sink: {s3: {kms_key_id: alias/x}}", nil, "sink.s3.kms_key_id", "aws:kms"},
		{"s3 endpoint", "sink: {s3: {endpoint: 'ftp://x'}}", nil, "sink.s3.endpoint", "http"},
		{"job_name empty", "job_name: ''", nil, "job_name", "1 to 64"},
		{"job_name space", "job_name: billing report", nil, "job_name", "1 to 64"},
		{"job_name slash", "job_name: a/b", nil, "job_name", "1 to 64"},
		{"job_name long", "job_name: " + long, nil, "job_name", "1 to 64"},
		{"agency bps high", "commission: {agencies: {Acme.Travel: 10001}}", nil, "commission.agencies[Acme.Travel]", "between 0 and 10000"},
		{"agency bps negative", "commission: {agencies: {a: -1}}", nil, "commission.agencies[a]", "between 0 and 10000"},
		{"agency bps word", "commission: {agencies: {a: ten}}", nil, "commission.agencies[a]", "integer"},
		{"agency bps fraction", "commission: {agencies: {a: 12.5}}", nil, "commission.agencies[a]", "integer"},
		{"agency bps list of numbers", "commission: {agencies: {a: [1]}}", nil, "commission.agencies[a][0]", "mapping"},
		{"agency bps mapping", "commission: {agencies: {a: {bps: 1}}}", nil, "commission.agencies[a]", "integer"},
		{"agency rates empty", "commission: {agencies: {a: []}}", nil, "commission.agencies[a]", "at least one"},
		{"agency rate bps high", "commission: {agencies: {a: [{bps: 10001}]}}", nil, "commission.agencies[a][0].bps", "between 0 and 10000"},
		{"agency rate no bps", "commission: {agencies: {a: [{from: 2026-01-01}]}}", nil, "commission.agencies[a][0].bps", "needs bps"},
		{"agency rate bad from", "commission: {agencies: {a: [{bps: 1}, {bps: 2, from: 2026-13-01}]}}", nil, "commission.agencies[a][1].from", "RFC 3339"},
		{"agency rate unknown key", "commission: {agencies: {a: [{bps: 1, to: 2026-01-01}]}}", nil, "commission.agencies[a][0].to", "unknown"},
		{"agency rates unsorted", "commission: {agencies: {a: [{bps: 1, from: 2026-02-01}, {bps: 2, from: 2026-01-01}]}}", nil, "commission.agencies[a][1].from", "increase"},
		{"agency rates same date", "commission: {agencies: {a: [{bps: 1, from: 2026-02-01}, {bps: 2, from: \"2026-02-01T00:00:00Z\"}]}}", nil, "commission.agencies[a][1].from", "increase"},
		{"agency second rate undated", "commission: {agencies: {a: [{bps: 1}, {bps: 2}]}}", nil, "commission.agencies[a][1].from", "only the first"},
		{"default rates dated first", "commission: {default_bps: [{bps: 1, from: 2026-01-01}]}", nil, "commission.default_bps[0].from", "from the start"},
		{"default rate bps word", "commission: {default_bps: [{bps: 1}, {bps: x, from: 2026-01-01}]}", nil, "commission.default_bps[1].bps", "integer"},
		{"default rates mapping", "commission: {default_bps: {bps: 1}}", nil, "commission.default_bps", "single value"},
		{"agency duplicate", "commission: {agencies: {a: 1, a: 2}}", nil, "commission.agencies[a]", "twice"},
		{"agency id empty", "commission: {agencies: {'': 1}}", nil, "commission.agencies[]", "empty"},
		{"agency id control", "commission: {agencies: {\"a\\tb\": 1}}", nil, "commission.agencies[a\tb]", "U+0009"},
		{"agencies list", "commission: {agencies: [a]}", nil, "commission.agencies", "mapping"},
		{"default_bps", "commission: {default_bps: 10001}", nil, "commission.default_bps", "between 0 and 10000"},
		{"cron words", "schedule: {cron: every 15 minutes}", nil, "schedule.cron", "not a cron spec"},
		{"cron 6 fields", "schedule: {cron: '0 */15 * * * *'}", nil, "schedule.cron", "not a cron spec"},
		{"cron TZ prefix", "schedule: {cron: 'TZ=UTC */15 * * * *'}", nil, "schedule.cron", "schedule.timezone"},
		{"timezone", "schedule: {timezone: Mars/Olympus}", nil, "schedule.timezone", "IANA"},
		{"timezone Local", "schedule: {timezone: Local}", nil, "schedule.timezone", "IANA"},
		{"pushgateway no scheme", "metrics: {pushgateway_url: 'pushgateway:9091'}", nil, "metrics.pushgateway_url", "http"},
		{"log level", "log: {level: verbose}", nil, "log.level", "debug, info, warn, error"},
		{"log format", "log: {format: xml}", nil, "log.format", "json, text"},
		{"env typo", "", []string{"REPORTJOB_SINK_ULR=s3://b/p"}, "REPORTJOB_SINK_ULR", "did you mean REPORTJOB_SINK_URL?"},
		{"env unknown", "", []string{"REPORTJOB_VERBOSE=1"}, "REPORTJOB_VERBOSE", "unknown variable"},
		{"env agencies", "", []string{"REPORTJOB_COMMISSION_AGENCIES=a=1"}, "REPORTJOB_COMMISSION_AGENCIES", "config file"},
		{"env int", "", []string{"REPORTJOB_KEYS_SHARDS=eight"}, "keys.shards", "integer"},
		{"env bool", "", []string{"REPORTJOB_SINK_S3_PATH_STYLE=yes"}, "sink.s3.path_style", "true or false"},
		{"env duration", "", []string{"REPORTJOB_REPORT_LATENESS=2"}, "report.lateness", "duration"},
		{"env list", "", []string{"REPORTJOB_REPORT_AGENCY_FILES=csv,xlsx"}, "report.agency_files", `unknown format "xlsx"`},
		{"env bad value over good file", "report: {period: 1h}", []string{"REPORTJOB_REPORT_PERIOD=45m"}, "report.period", "one of"},
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
			if errs[0].Key != tt.key || !strings.Contains(errs[0].Reason, tt.reason) {
				t.Errorf("got key %q reason %q, want key %q reason containing %q", errs[0].Key, errs[0].Reason, tt.key, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "config: "+tt.key+" ") {
				t.Errorf("message %q does not start with the key", err)
			}
		})
	}
}

// configErrors returns the *Error values joined in err; it fails the
// test when err holds anything else.
func configErrors(t *testing.T, err error) []*Error {
	t.Helper()
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	var out []*Error
	for _, e := range list {
		ce, ok := e.(*Error)
		if !ok {
			t.Fatalf("not a *Error: %T %v", e, e)
		}
		out = append(out, ce)
	}
	return out
}

func TestConfigErrorsFromFile(t *testing.T) {
	path := filepath.Join("testdata", "config", "unknown_nested.yaml")
	_, err := Load(path, true, nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "report.lateneess" || ce.Source != path+":10" {
		t.Fatalf("err = %v, want report.lateneess at %s:10", err, path)
	}
	want := `config: report.lateneess "5m" (` + path + `:10): unknown key; did you mean report.lateness?`
	if err.Error() != want {
		t.Errorf("message\n%s\nwant\n%s", err, want)
	}

	path = filepath.Join("testdata", "config", "several_errors.yaml")
	_, err = Load(path, true, []string{"REPORTJOB_LOG_FORMAT=xml"})
	var got []string
	for _, e := range configErrors(t, err) {
		got = append(got, e.Key+"@"+e.Source)
	}
	wantKeys := []string{"report.period@" + path + ":3", "report.concurrency@" + path + ":4",
		"log.level@" + path + ":6", "log.format@REPORTJOB_LOG_FORMAT"}
	if !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("errors %v, want %v", got, wantKeys)
	}
}

func TestConfigYAMLSyntaxError(t *testing.T) {
	path := filepath.Join("testdata", "config", "syntax_error.yaml")
	_, err := Load(path, true, nil)
	if err == nil {
		t.Fatal("no error")
	}
	var ce *Error // a config error (exit 2)
	// yaml.v3 names the line before the one where the flow list starts.
	if !errors.As(err, &ce) || ce.Source != path || !strings.HasPrefix(err.Error(), "config: "+path+": line ") {
		t.Errorf("error %q does not name the file and line", err)
	}
	for _, doc := range []string{"- a\n- b\n", "just a string\n", "a: 1\n---\nb: 2\n"} {
		if _, err := Parse([]byte(doc), "c.yaml", nil); err == nil || !strings.Contains(err.Error(), "c.yaml: line ") {
			t.Errorf("%q: err = %v, want one naming c.yaml and the line", doc, err)
		}
	}
}

func TestConfigErrorMessage(t *testing.T) {
	e := &Error{Key: "report.period", Value: "7m", Reason: "must be one of 15m, 30m"}
	if got, want := e.Error(), `config: report.period "7m": must be one of 15m, 30m`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
	e.Source = "config.yaml:14"
	if got, want := e.Error(), `config: report.period "7m" (config.yaml:14): must be one of 15m, 30m`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
}

func TestParseInstant(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2024-01-02":                time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC),
		"2024-01-02T03:04:05Z":      time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		"2024-01-02T03:04:05+02:00": time.Date(2024, 1, 2, 1, 4, 5, 0, time.UTC),
		"1000-01-01":                time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
		"9999-12-31T23:59:59Z":      time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		"1969-12-31T23:00:00Z":      time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC),
	} {
		got, err := ParseInstant(in)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseInstant(%q) = %v, %v; want %v UTC", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2024-1-2", "2024-01-02 03:04", "2024-01-02T03:04:05",
		// Outside the years 1000 to 9999, in UTC: the zero time means
		// "not set", and year 0 periods could not be found again.
		"0001-01-01T00:00:00Z", "0000-01-01", "0999-12-31T23:59:59Z", "1000-01-01T00:30:00+01:00", "9999-12-31T23:00:00-05:00"} {
		if _, err := ParseInstant(in); err == nil {
			t.Errorf("ParseInstant(%q): no error", in)
		}
	}
}

// TestConfigDatedRates: commission.default_bps and commission.agencies.X
// take an integer or a list of dated rates (RFC 3339 or YYYY-MM-DD, UTC);
// REPORTJOB_COMMISSION_DEFAULT_BPS replaces the file's list with one rate.
func TestConfigDatedRates(t *testing.T) {
	file := `commission:
  default_bps: [{bps: 1000}, {bps: 900, from: "2026-12-01"}]
  agencies:
    acme: [{bps: 1200}, {bps: 1100, from: "2027-01-01T12:00:00+02:00"}]
    later: [{bps: 500, from: 2027-02-01}]
    flat: 700
`
	c, err := Parse([]byte(file), "c.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	dec1 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	wantDefault := pricing.Schedule{{BPS: 1000}, {BPS: 900, From: dec1}}
	wantAgencies := map[string]pricing.Schedule{
		"acme":  {{BPS: 1200}, {BPS: 1100, From: time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC)}},
		"later": {{BPS: 500, From: time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)}},
		"flat":  {{BPS: 700}},
	}
	if !reflect.DeepEqual(c.Commission.Default, wantDefault) {
		t.Errorf("default = %v, want %v", c.Commission.Default, wantDefault)
	}
	if !reflect.DeepEqual(c.Commission.Agencies, wantAgencies) {
		t.Errorf("agencies = %v, want %v", c.Commission.Agencies, wantAgencies)
	}
	c, err = Parse([]byte(file), "c.yaml", []string{"REPORTJOB_COMMISSION_DEFAULT_BPS=800"})
	if err != nil {
		t.Fatal(err)
	}
	if w := (pricing.Schedule{{BPS: 800}}); !reflect.DeepEqual(c.Commission.Default, w) {
		t.Errorf("default with the environment = %v, want %v", c.Commission.Default, w)
	}
}

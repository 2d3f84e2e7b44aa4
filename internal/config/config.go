// Package config is reportjob's configuration: the keys of config.yaml,
// their defaults, loading them with viper from the file and REPORTJOB_*
// environment variables, and checking every value. Load returns a
// validated *Config (durations and times parsed, names normalised) or an
// error per bad value (*Error), each naming the key, the value and where
// it came from.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // schedule.timezone must load in minimal container images too

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/reportjob/reportjob/internal/pricing"
)

// Config is the validated configuration (docs/reference.md, Configuration
// reference): durations and times parsed, every value checked, names
// normalised.
type Config struct {
	// File is the config file read, as given ("" when none was: the
	// defaults and the environment only). Relative paths in it are
	// resolved against its folder (see resolvePaths).
	File    string
	JobName string
	Store   struct {
		Backend string // "embedded" | "dynamodb"
		// Embedded.Path is resolved against the config file's folder.
		Embedded struct{ Path string }
		DynamoDB struct{ Table, StateTable, Region, Endpoint string }
	}
	Keys struct {
		PartitionAttr, SortAttr string
		Shards                  int
	}
	Sink struct {
		URL string // "file://DIR" or "s3://BUCKET/PREFIX", as configured
		// Parsed from URL: Dir for file:// (everything after "file://", so
		// file://./reports is the relative ./reports and file:///srv/r is
		// /srv/r; a relative one resolved against the config file's
		// folder); Bucket and Prefix (no leading or trailing "/") for s3://.
		Dir, Bucket, Prefix string
		S3                  struct {
			Region, Endpoint string
			PathStyle        bool
			SSE, KMSKeyID    string // SSE: "", "AES256" or "aws:kms"
		}
	}
	Report struct {
		Period, Lateness time.Duration
		Start            time.Time // zero when unset; else UTC, a period boundary
		LineItems        bool
		// AgencyFiles is the per-agency deliverables, "csv" and/or
		// "parquet", in the order given, never nil; empty for none.
		AgencyFiles []string
		// RecheckAfter is the delays after a period's end at which a
		// delivered period is re-read, ascending, without duplicates, each
		// > 0; empty (never nil) for no rechecks.
		RecheckAfter []time.Duration
		// DedupeWindow is how far back a transaction id billed in an
		// earlier period is still recognised; 0 = within a period only.
		DedupeWindow     time.Duration
		MaxPeriodsPerRun int
		// LeaseTTL is how long a run's lease lasts unless renewed (every
		// third of it); after a crash on DynamoDB, the next run waits for
		// it to expire.
		LeaseTTL    time.Duration
		Concurrency int
	}
	Schedule struct {
		Cron, Timezone string
		Location       *time.Location // Timezone loaded
	}
	// Commission is commission.*: today's rates (package pricing says
	// which one a transaction is billed at).
	Commission struct {
		// Default is commission.default_bps: one rate from the start, or
		// dated rates whose first applies from the start.
		Default pricing.Schedule
		// Agencies are commission.agencies: never nil; ids exactly as
		// written in the file.
		Agencies map[string]pricing.Schedule
	}
	// Statements is statements.*: the monthly close.
	Statements Statements
	// Delivery is delivery.*: e-mail and signed events.
	Delivery Delivery
	Metrics  struct{ PushgatewayURL string }
	Log      struct {
		Level, Format string // debug|info|warn|error; json|text
		// FormatSet is whether log.format was set (in the file or the
		// environment): unset, a terminal gets text under its progress
		// bar and anything else JSON; set, it applies everywhere.
		FormatSet bool
	}
}

// Error is a bad configuration value: the key path (or, for a variable
// that is no key, the REPORTJOB_* name), the value and why it is refused.
// Key is "" when the file as a whole is wrong: unreadable (Err is the
// cause), not YAML, or not one mapping.
type Error struct {
	Key, Value, Reason string
	Source             string // "config.yaml:14", "REPORTJOB_REPORT_PERIOD", "environment", the file, or "" for a default
	Err                error
}

// Error returns e.g. `config: report.period "7m" (config.yaml:14): must be one of 15m, 30m, ...`
// or, for the whole file, `config: config.yaml: line 3: did not find expected key`.
func (e *Error) Error() string {
	if e.Key == "" {
		return "config: " + e.Source + ": " + e.Reason
	}
	s := "config: " + e.Key + " " + strconv.Quote(e.Value)
	if e.Source != "" {
		s += " (" + e.Source + ")"
	}
	return s + ": " + e.Reason
}

// Unwrap returns the cause, if any (an unreadable file's *fs.PathError).
func (e *Error) Unwrap() error { return e.Err }

const (
	// DefaultPath is the file Load reads when given no path.
	DefaultPath = "config.yaml"
	// EnvConfigPath names the config file (like --config); Load ignores it.
	EnvConfigPath = "REPORTJOB_CONFIG"

	envPrefix      = "REPORTJOB_"
	agenciesKey    = "commission.agencies"
	formatsKey     = "report.formats" // version 1, removed
	maxShards      = 64               // each period costs quarters x shards Queries (24h x 64 = 6144); 64 partitions take ~64k writes/s
	maxConcurrency = 64               // Queries in flight; more only buys throttling
	maxLateness    = 24 * time.Hour
	day            = 24 * time.Hour
	maxDelay       = 400 * day // report.recheck_after and report.dedupe_window
	minLeaseTTL    = 5 * time.Second
	maxLeaseTTL    = time.Hour
	maxRecheckSpan = 10000 // periods within the longest recheck delay
)

// formatsRemoved tells a version 1 config what replaced report.formats.
const formatsRemoved = "report.formats no longer exists (configuration version 2): summary/ and " +
	"transactions/ Parquet are always written (transactions/ when report.line_items is true); " +
	"per-agency files are chosen with report.agency_files: csv, parquet, or [] for none"

// configKeys is every leaf key with its default, in file order. The
// environment name of each is EnvName(path). A value is a string, or a
// []string for a list (a YAML sequence, or comma-separated in the
// environment).
var configKeys = []struct {
	path string
	def  any
}{
	{"job_name", "billing-report"},
	{"store.backend", "embedded"},
	{"store.embedded.path", "./data/reportjob.db"},
	{"store.dynamodb.table", "billing_transactions"},
	{"store.dynamodb.state_table", "billing_transactions_state"},
	{"store.dynamodb.region", "us-east-1"},
	{"store.dynamodb.endpoint", ""},
	{"keys.partition_attr", "quarter_hour_timestamp"},
	{"keys.sort_attr", "random_timestamp"},
	{"keys.shards", "1"},
	{"sink.url", "file://./reports"},
	{"sink.s3.region", "us-east-1"},
	{"sink.s3.endpoint", ""},
	{"sink.s3.path_style", "false"},
	{"sink.s3.sse", "AES256"},
	{"sink.s3.kms_key_id", ""},
	{"report.period", "1h"},
	{"report.lateness", "2m"},
	{"report.start", ""},
	{"report.line_items", "true"},
	{"report.agency_files", []string{"csv"}},
	{"report.recheck_after", []string{"1h"}},
	{"report.dedupe_window", "35d"},
	{"report.max_periods_per_run", "96"},
	{"report.lease_ttl", "2m"},
	{"report.concurrency", "8"},
	{"statements.timezone", "UTC"},
	{"statements.close_after", "3d"},
	{"statements.agency_files", []string{"pdf", "csv"}},
	{"statements.directory", ""},
	{"statements.issuer.legal_name", ""},
	{"statements.issuer.address", []string{}},
	{"statements.issuer.tax_id", ""},
	{"statements.issuer.contact", ""},
	{"statements.issuer.payment_terms", "30d"},
	{"statements.issuer.payment_instructions", ""},
	{"statements.issuer.logo", ""},
	{"statements.issuer.number_prefix", ""},
	{"statements.fonts", []string{}},
	{"schedule.cron", "*/15 * * * *"},
	{"schedule.timezone", "UTC"},
	{"commission.default_bps", "1000"},
	// commission.default_bps as a list of dated rates, and
	// commission.agencies (agency id -> rates), are read from the raw YAML, not
	// through viper, which lower-cases keys and splits them at dots; agency
	// ids are case-sensitive and may contain dots. It has no environment
	// override: REPORTJOB_COMMISSION_AGENCIES is an error.
	{"delivery.since", ""},
	{"delivery.email.host", ""},
	{"delivery.email.port", "587"},
	{"delivery.email.tls", "starttls"},
	{"delivery.email.username", ""},
	{"delivery.email.password_env", ""},
	{"delivery.email.password_file", ""},
	{"delivery.email.from", ""},
	{"delivery.email.reply_to", ""},
	{"delivery.email.bcc", []string{}},
	{"delivery.email.attach", []string{"pdf"}},
	{"delivery.email.drafts", "false"},
	// delivery.webhooks (a list of mappings) is read from the raw YAML
	// (readWebhooks); file only.
	{"metrics.pushgateway_url", ""},
	{"log.level", "info"},
	{"log.format", "json"},
}

// EnvName returns the environment variable that overrides the key path:
// REPORTJOB_ + the path upper-cased with "_" for ".".
// EnvName("report.max_periods_per_run") is REPORTJOB_REPORT_MAX_PERIODS_PER_RUN.
func EnvName(path string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// Default returns the built-in configuration, what an empty file gives.
func Default() *Config {
	c, err := Parse(nil, "", nil)
	if err != nil {
		panic("config: the built-in defaults are invalid: " + err.Error())
	}
	return c
}

// Load reads the YAML file at path ("" means DefaultPath), applies
// REPORTJOB_* overrides from env (os.Environ() form), and validates. A
// missing file is an error when the path was given explicitly (flag or
// REPORTJOB_CONFIG) and means the built-in defaults otherwise, so that
// `reportjob demo` works in any folder. Bad values are *Error (several
// joined with errors.Join); YAML syntax errors name the file and line.
func Load(path string, explicit bool, env []string) (*Config, error) {
	if path == "" {
		path = DefaultPath
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return Parse(nil, "", env)
		}
		reason := err.Error()
		if pe, ok := err.(*fs.PathError); ok {
			reason = "cannot read: " + pe.Err.Error()
		}
		return nil, &Error{Source: path, Reason: reason, Err: err}
	}
	return Parse(data, path, env)
}

// Parse is Load of the YAML document data, read from the file name (used
// in messages; data may be empty): it layers the defaults, data and env
// with viper, then decodes and checks every key.
func Parse(data []byte, name string, env []string) (*Config, error) {
	d := &decoder{v: viper.New(), src: map[string]string{}, agencies: map[string]pricing.Schedule{},
		known: map[string]bool{}, lists: map[string]bool{}, env: env}
	for _, k := range configKeys {
		d.v.SetDefault(k.path, k.def)
		d.known[k.path] = true
		if _, ok := k.def.([]string); ok {
			d.lists[k.path] = true
		}
	}
	if len(data) > 0 {
		root, err := parseYAML(data, name)
		if err != nil {
			return nil, err
		}
		if root != nil {
			values := map[string]any{}
			d.walk(name, "", root, values)
			if err := d.v.MergeConfigMap(values); err != nil {
				return nil, &Error{Source: name, Reason: err.Error(), Err: err}
			}
		}
	}
	d.applyEnv(env)
	c := d.decode()
	d.resolvePaths(c, name)
	d.checkStatementFiles(c)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return c, nil
}

func parseYAML(data []byte, name string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // only comments
		}
		return nil, &Error{Source: name, Reason: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, &Error{Source: name, Reason: fmt.Sprintf("line %d: a second YAML document; the file must hold one", more.Line)}
	}
	root := yamlDeref(&doc)
	if len(doc.Content) == 1 {
		root = yamlDeref(doc.Content[0])
	}
	switch {
	case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
		return nil, nil
	case root.Kind != yaml.MappingNode:
		return nil, &Error{Source: name, Reason: fmt.Sprintf("line %d: the top level must be a mapping of keys", root.Line)}
	}
	return root, nil
}

func yamlDeref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

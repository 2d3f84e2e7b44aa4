package main

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
)

// Config is the validated configuration (SPEC section 6): durations and
// times parsed, every value checked, names normalised.
type Config struct {
	JobName string
	Store   struct {
		Backend  string // "embedded" | "dynamodb"
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
		// /srv/r); Bucket and Prefix (no leading or trailing "/") for s3://.
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
		Formats          []string  // "parquet" always first, then "csv" if asked
		LineItems        bool
		MaxPeriodsPerRun int
		Concurrency      int
	}
	Schedule struct {
		Cron, Timezone string
		Location       *time.Location // Timezone loaded
	}
	Commission struct {
		DefaultBPS int
		Agencies   map[string]int // never nil; ids exactly as written in the file
	}
	Metrics struct{ PushgatewayURL string }
	Log     struct{ Level, Format string } // debug|info|warn|error; json|text
}

// ConfigError is a bad configuration value: the key path (or, for an
// unknown variable, the REPORTJOB_* name), the value and why it is refused.
// Key is "" when the file as a whole is wrong: unreadable (Err is the
// cause), not YAML, or not one mapping.
type ConfigError struct {
	Key, Value, Reason string
	Source             string // "config.yaml:14", "REPORTJOB_REPORT_PERIOD", the file, or "" for a default
	Err                error
}

// Error returns e.g. `config: report.period "7m" (config.yaml:14): must be one of 15m, 30m, ...`
// or, for the whole file, `config: config.yaml: line 3: did not find expected key`.
func (e *ConfigError) Error() string {
	if e.Key == "" {
		return "config: " + e.Source + ": " + e.Reason
	}
	s := "config: " + e.Key + " " + strconv.Quote(e.Value)
	if e.Source != "" {
		s += " (" + e.Source + ")"
	}
	return s + ": " + e.Reason
}

func (e *ConfigError) Unwrap() error { return e.Err }

const (
	defaultConfigPath = "config.yaml"
	envPrefix         = "REPORTJOB_"
	envConfigPath     = "REPORTJOB_CONFIG" // read by main, ignored here
	agenciesKey       = "commission.agencies"
	maxShards         = 64 // each period costs quarters x shards Queries (24h x 64 = 6144); 64 partitions take ~64k writes/s
	maxConcurrency    = 64 // Queries in flight; more only buys throttling
	maxLateness       = 24 * time.Hour
)

// configKeys is every leaf key with its SPEC default, in file order. The
// environment name of each is REPORTJOB_ + the path upper-cased, "." -> "_".
// A value is a string, or []string for a list.
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
	{"report.formats", []string{"parquet", "csv"}},
	{"report.line_items", "true"},
	{"report.max_periods_per_run", "96"},
	{"report.concurrency", "8"},
	{"schedule.cron", "*/15 * * * *"},
	{"schedule.timezone", "UTC"},
	{"commission.default_bps", "1000"},
	// commission.agencies (agency id -> bps) is read from the raw YAML, not
	// through viper, which lower-cases keys and splits them at dots; agency
	// ids are case-sensitive and may contain dots. It has no environment
	// override: REPORTJOB_COMMISSION_AGENCIES is an error.
	{"metrics.pushgateway_url", ""},
	{"log.level", "info"},
	{"log.format", "json"},
}

func cfgEnvName(path string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// defaultConfig returns the built-in configuration: SPEC section 6.
func defaultConfig() *Config {
	c, err := parseConfig(nil, "", nil)
	if err != nil {
		panic("reportjob: built-in config is invalid: " + err.Error())
	}
	return c
}

// loadConfig reads the YAML file at path ("" means ./config.yaml), applies
// REPORTJOB_* overrides from env (os.Environ() form), and validates. A
// missing file is an error when the path was given explicitly (flag or
// REPORTJOB_CONFIG) and means the built-in defaults otherwise, so that
// `reportjob demo` works in any folder. Bad values are *ConfigError (several
// joined with errors.Join); YAML syntax errors name the file and line.
func loadConfig(path string, explicit bool, env []string) (*Config, error) {
	if path == "" {
		path = defaultConfigPath
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return parseConfig(nil, "", env)
		}
		reason := err.Error()
		if pe, ok := err.(*fs.PathError); ok {
			reason = "cannot read: " + pe.Err.Error()
		}
		return nil, &ConfigError{Source: path, Reason: reason, Err: err}
	}
	return parseConfig(data, path, env)
}

// parseConfig layers defaults, the YAML document data (from file name) and
// env with viper, then decodes and validates every key.
func parseConfig(data []byte, name string, env []string) (*Config, error) {
	d := &cfgDecoder{v: viper.New(), src: map[string]string{}, agencies: map[string]int{}}
	known := map[string]bool{}
	for _, k := range configKeys {
		d.v.SetDefault(k.path, k.def)
		known[k.path] = true
	}
	if len(data) > 0 {
		root, err := parseYAML(data, name)
		if err != nil {
			return nil, err
		}
		if root != nil {
			values := map[string]any{}
			d.walk(name, "", root, known, values)
			if err := d.v.MergeConfigMap(values); err != nil {
				return nil, &ConfigError{Source: name, Reason: err.Error(), Err: err}
			}
		}
	}
	d.applyEnv(env, known)
	c := d.decode()
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
		return nil, &ConfigError{Source: name, Reason: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, &ConfigError{Source: name, Reason: fmt.Sprintf("line %d: a second YAML document; the file must hold one", more.Line)}
	}
	root := yamlDeref(&doc)
	if len(doc.Content) == 1 {
		root = yamlDeref(doc.Content[0])
	}
	switch {
	case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
		return nil, nil
	case root.Kind != yaml.MappingNode:
		return nil, &ConfigError{Source: name, Reason: fmt.Sprintf("line %d: the top level must be a mapping of keys", root.Line)}
	}
	return root, nil
}

func yamlDeref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

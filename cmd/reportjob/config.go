package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // schedule.timezone must load in minimal container images too
	"unicode"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/reportjob/reportjob/internal/report"
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

// cfgDecoder collects every error instead of stopping at the first.
type cfgDecoder struct {
	v        *viper.Viper
	src      map[string]string // key path -> where its value came from
	agencies map[string]int
	errs     []error
}

func (d *cfgDecoder) fail(key, value, reason string) {
	d.errs = append(d.errs, &ConfigError{Key: key, Value: value, Reason: reason, Source: d.src[key]})
}

// walk checks mapping n at prefix against the known keys and puts its leaf
// values, as strings ([]string for lists), into the nested map out.
func (d *cfgDecoder) walk(name, prefix string, n *yaml.Node, known map[string]bool, out map[string]any) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], yamlDeref(n.Content[i+1])
		path := strings.TrimPrefix(prefix+"."+kn.Value, ".")
		d.src[path] = fmt.Sprintf("%s:%d", name, kn.Line)
		if seen[kn.Value] {
			d.fail(path, yamlSummary(vn), "key given twice")
			continue
		}
		seen[kn.Value] = true
		switch {
		case path == agenciesKey:
			d.readAgencies(name, vn)
		case known[path] && path == "report.formats":
			if l := d.list(path, vn); l != nil { // nil: error reported
				out[kn.Value] = l
			}
		case known[path]:
			if vn.Kind != yaml.ScalarNode {
				d.fail(path, yamlSummary(vn), "must be a single value, not a list or mapping")
				continue
			}
			out[kn.Value] = yamlScalar(vn)
		case cfgIsSection(path, known):
			if vn.Kind == yaml.ScalarNode && vn.Tag == "!!null" {
				continue // "report:" with nothing under it
			}
			if vn.Kind != yaml.MappingNode {
				d.fail(path, yamlSummary(vn), "must be a mapping of keys")
				continue
			}
			sub := map[string]any{}
			d.walk(name, path, vn, known, sub)
			out[kn.Value] = sub
		default:
			d.fail(path, yamlSummary(vn), "unknown key"+cfgSuggest(path, cfgAllPaths(known)))
		}
	}
}

func yamlScalar(n *yaml.Node) string {
	if n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

func yamlSummary(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "{...}"
	case yaml.SequenceNode:
		return "[...]"
	}
	return yamlScalar(n)
}

// list reads a YAML sequence of scalars, or one comma-separated scalar.
func (d *cfgDecoder) list(path string, n *yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return cfgSplitList(yamlScalar(n))
	case yaml.SequenceNode:
		l := []string{}
		for _, e := range n.Content {
			if e = yamlDeref(e); e.Kind != yaml.ScalarNode {
				d.fail(path, yamlSummary(n), "must be a list of names")
				return nil
			}
			l = append(l, strings.TrimSpace(yamlScalar(e)))
		}
		return l
	}
	d.fail(path, yamlSummary(n), "must be a list")
	return nil
}

func cfgSplitList(s string) []string {
	l := []string{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			l = append(l, f)
		}
	}
	return l
}

func cfgIsSection(path string, known map[string]bool) bool {
	for k := range known {
		if strings.HasPrefix(k, path+".") {
			return true
		}
	}
	return false
}

func cfgAllPaths(known map[string]bool) []string {
	var l []string
	for k := range known {
		for p := k; p != ""; {
			l = append(l, p)
			i := strings.LastIndexByte(p, '.')
			p = p[:max(i, 0)]
		}
	}
	l = append(l, agenciesKey)
	slices.Sort(l) // a deterministic suggestion on ties
	return slices.Compact(l)
}

func (d *cfgDecoder) readAgencies(name string, n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(agenciesKey, yamlSummary(n), "must be a mapping of agency id to commission bps")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := yamlDeref(n.Content[i]), yamlDeref(n.Content[i+1])
		id := yamlScalar(kn)
		key := agenciesKey + "[" + id + "]"
		_, dup := d.src[key]
		d.src[key] = fmt.Sprintf("%s:%d", name, kn.Line)
		if dup {
			d.fail(key, yamlSummary(vn), "agency given twice")
			continue
		}
		if reason := agencyIDProblem(id); kn.Kind != yaml.ScalarNode || reason != "" {
			d.fail(key, yamlSummary(vn), "bad agency id: "+orDefault(reason, "not a plain name"))
			continue
		}
		if vn.Kind != yaml.ScalarNode {
			d.fail(key, yamlSummary(vn), "must be an integer between 0 and 10000 (basis points)")
			continue
		}
		if bps, ok := d.intIn(key, yamlScalar(vn), 0, 10000); ok {
			d.agencies[id] = bps
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// agencyIDProblem applies the producer contract's agency_id rule (SPEC 2).
func agencyIDProblem(id string) string {
	switch n := utf8.RuneCountInString(id); {
	case !utf8.ValidString(id):
		return "not valid UTF-8"
	case n == 0:
		return "empty"
	case n > 128:
		return "longer than 128 characters"
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("contains character %U", r)
		}
	}
	return ""
}

// applyEnv sets each REPORTJOB_* variable over the file and defaults. The
// mapping is built from configKeys, not viper's AutomaticEnv, because "_"
// is both the separator and part of key names (max_periods_per_run).
func (d *cfgDecoder) applyEnv(env []string, known map[string]bool) {
	byEnv := map[string]string{}
	var names []string
	for k := range known {
		byEnv[cfgEnvName(k)] = k
		names = append(names, cfgEnvName(k))
	}
	slices.Sort(names)
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || name == envConfigPath {
			continue
		}
		path, ok := byEnv[name]
		switch {
		case name == cfgEnvName(agenciesKey):
			d.errs = append(d.errs, &ConfigError{Key: name, Value: val, Source: "environment",
				Reason: "commission.agencies cannot be set from the environment; set it in the config file"})
		case !ok:
			d.errs = append(d.errs, &ConfigError{Key: name, Value: val, Source: "environment",
				Reason: "unknown variable: no such config key" + cfgSuggest(name, names)})
		case path == "report.formats":
			d.v.Set(path, cfgSplitList(val))
			d.src[path] = name
		default:
			d.v.Set(path, val)
			d.src[path] = name
		}
	}
}

func (d *cfgDecoder) str(key string) string { return d.v.GetString(key) }

func (d *cfgDecoder) intIn(key, s string, lo, hi int) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil {
		d.fail(key, s, "must be an integer")
		return 0, false
	}
	if n < lo || n > hi {
		if hi == math.MaxInt {
			d.fail(key, s, fmt.Sprintf("must be at least %d", lo))
		} else {
			d.fail(key, s, fmt.Sprintf("must be between %d and %d", lo, hi))
		}
		return 0, false
	}
	return n, true
}

func (d *cfgDecoder) int(key string, lo, hi int) int {
	n, _ := d.intIn(key, d.str(key), lo, hi)
	return n
}

func (d *cfgDecoder) bool(key string) bool {
	switch s := d.str(key); strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	default:
		d.fail(key, s, "must be true or false")
		return false
	}
}

func (d *cfgDecoder) oneOf(key string, allowed ...string) string {
	s := d.str(key)
	if !slices.Contains(allowed, s) {
		d.fail(key, s, "must be one of "+strings.Join(allowed, ", "))
	}
	return s
}

func (d *cfgDecoder) httpURL(key string) string {
	s := d.str(key)
	if s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.fail(key, s, `must be "" or an http:// or https:// URL with a host`)
	}
	return s
}

func (d *cfgDecoder) nonEmpty(key string, max int) string {
	s := d.str(key)
	switch {
	case s == "":
		d.fail(key, s, "must not be empty")
	case len(s) > max:
		d.fail(key, s, fmt.Sprintf("longer than %d bytes", max))
	}
	return s
}

var (
	jobNameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	tableNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{3,255}$`) // DynamoDB table name rule
)

func (d *cfgDecoder) decode() *Config {
	var c Config
	c.JobName = d.str("job_name")
	if !jobNameRE.MatchString(c.JobName) {
		d.fail("job_name", c.JobName, "must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}

	c.Store.Backend = d.oneOf("store.backend", "embedded", "dynamodb")
	switch c.Store.Backend {
	case "embedded":
		d.nonEmpty("store.embedded.path", 4096)
	case "dynamodb":
		for _, k := range []string{"store.dynamodb.table", "store.dynamodb.state_table"} {
			if s := d.str(k); !tableNameRE.MatchString(s) {
				d.fail(k, s, "must be a DynamoDB table name: 3 to 255 of A-Z a-z 0-9 . _ -")
			}
		}
	}
	c.Store.Embedded.Path = d.str("store.embedded.path")
	c.Store.DynamoDB.Table = d.str("store.dynamodb.table")
	c.Store.DynamoDB.StateTable = d.str("store.dynamodb.state_table")
	c.Store.DynamoDB.Region = d.str("store.dynamodb.region") // "" = the SDK's default chain
	c.Store.DynamoDB.Endpoint = d.httpURL("store.dynamodb.endpoint")

	c.Keys.PartitionAttr = d.nonEmpty("keys.partition_attr", 255)
	c.Keys.SortAttr = d.nonEmpty("keys.sort_attr", 255)
	if c.Keys.SortAttr != "" && c.Keys.SortAttr == c.Keys.PartitionAttr {
		d.fail("keys.sort_attr", c.Keys.SortAttr, "must differ from keys.partition_attr")
	}
	c.Keys.Shards = d.int("keys.shards", 1, maxShards)

	c.Sink.URL = d.str("sink.url")
	if scheme, rest, ok := strings.Cut(c.Sink.URL, "://"); !ok || (scheme != "file" && scheme != "s3") {
		d.fail("sink.url", c.Sink.URL, "must be file://DIR or s3://BUCKET/PREFIX")
	} else if reason := parseSinkURL(&c, scheme, rest); reason != "" {
		d.fail("sink.url", c.Sink.URL, reason)
	}
	c.Sink.S3.Region = d.str("sink.s3.region")
	c.Sink.S3.Endpoint = d.httpURL("sink.s3.endpoint")
	c.Sink.S3.PathStyle = d.bool("sink.s3.path_style")
	c.Sink.S3.SSE = d.oneOf("sink.s3.sse", "", "AES256", "aws:kms")
	c.Sink.S3.KMSKeyID = d.str("sink.s3.kms_key_id")
	if c.Sink.S3.KMSKeyID != "" && c.Sink.S3.SSE != "aws:kms" {
		d.fail("sink.s3.kms_key_id", c.Sink.S3.KMSKeyID, `only allowed with sink.s3.sse "aws:kms"`)
	}

	d.decodeReport(&c)

	c.Schedule.Cron = d.str("schedule.cron")
	if up := strings.ToUpper(c.Schedule.Cron); strings.HasPrefix(up, "TZ=") || strings.HasPrefix(up, "CRON_TZ=") {
		d.fail("schedule.cron", c.Schedule.Cron, "set the zone in schedule.timezone, not in the cron spec")
	} else if _, err := cron.ParseStandard(c.Schedule.Cron); err != nil {
		d.fail("schedule.cron", c.Schedule.Cron, "not a cron spec (5 fields, or @hourly, @every 15m, ...): "+err.Error())
	}
	c.Schedule.Timezone = orDefault(d.str("schedule.timezone"), "UTC")
	if loc, err := time.LoadLocation(c.Schedule.Timezone); err != nil || c.Schedule.Timezone == "Local" {
		d.fail("schedule.timezone", c.Schedule.Timezone, "must be an IANA time zone name such as UTC or Europe/Paris")
	} else {
		c.Schedule.Location = loc
	}

	c.Commission.DefaultBPS = d.int("commission.default_bps", 0, 10000)
	c.Commission.Agencies = d.agencies
	c.Metrics.PushgatewayURL = d.httpURL("metrics.pushgateway_url")
	c.Log.Level = d.oneOf("log.level", "debug", "info", "warn", "error")
	c.Log.Format = d.oneOf("log.format", "json", "text")
	return &c
}

func (d *cfgDecoder) decodeReport(c *Config) {
	r := &c.Report
	names := make([]string, len(report.Periods))
	for i, p := range report.Periods {
		names[i] = cfgDuration(p)
	}
	// A period is a duration: "60m" is 1h and "1440m" is 24h.
	s := d.str("report.period")
	if p, err := time.ParseDuration(s); err == nil && slices.Contains(report.Periods, p) {
		r.Period = p
	} else {
		d.fail("report.period", s, "must be one of "+strings.Join(names, ", "))
	}
	s = d.str("report.lateness")
	switch l, err := time.ParseDuration(s); {
	case err != nil:
		d.fail("report.lateness", s, "must be a duration such as 2m or 90s")
	case l < 0 || l >= maxLateness:
		d.fail("report.lateness", s, "must be at least 0 and less than 24h")
	default:
		r.Lateness = l
	}
	if s := d.str("report.start"); s != "" {
		t, err := parseInstant(s)
		switch {
		case err != nil:
			d.fail("report.start", s, "must be RFC 3339 (2024-01-01T00:00:00Z) or YYYY-MM-DD (UTC)")
		case r.Period != 0 && !report.Aligned(t, r.Period):
			d.fail("report.start", s, fmt.Sprintf("must be a %s period boundary (UTC midnight + k*%s), such as %s",
				cfgDuration(r.Period), cfgDuration(r.Period), report.PeriodAt(t, r.Period).Start.Format(time.RFC3339)))
		default:
			r.Start = t
		}
	}
	formats := d.v.GetStringSlice("report.formats")
	for _, f := range formats {
		if f != "parquet" && f != "csv" {
			d.fail("report.formats", strings.Join(formats, ","), fmt.Sprintf("unknown format %q: use parquet, csv", f))
			break
		}
	}
	if !slices.Contains(formats, "parquet") {
		// summary.parquet is always written (SPEC 4); csv is the option.
		d.fail("report.formats", strings.Join(formats, ","), "must include parquet (summary.parquet is always written); csv is optional")
	}
	r.Formats = []string{"parquet"}
	if slices.Contains(formats, "csv") {
		r.Formats = append(r.Formats, "csv")
	}
	r.LineItems = d.bool("report.line_items")
	r.MaxPeriodsPerRun = d.int("report.max_periods_per_run", 1, math.MaxInt)
	r.Concurrency = d.int("report.concurrency", 1, maxConcurrency)
}

// parseSink fills c.Sink.Dir or Bucket/Prefix and returns "" or what is wrong.
func parseSinkURL(c *Config, scheme, rest string) string {
	if strings.ContainsFunc(rest, unicode.IsControl) {
		return "contains a control character"
	}
	if scheme == "file" {
		if rest == "" {
			return "file:// needs a directory, such as file://./reports"
		}
		c.Sink.Dir = rest
		return ""
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if reason := bucketProblem(bucket); reason != "" {
		return "bad bucket name " + strconv.Quote(bucket) + ": " + reason
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		for seg := range strings.SplitSeq(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "prefix has an empty, . or .. segment"
			}
		}
	}
	c.Sink.Bucket, c.Sink.Prefix = bucket, prefix
	return ""
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// bucketProblem applies the S3 general purpose bucket naming rules.
func bucketProblem(b string) string {
	switch {
	case !bucketRE.MatchString(b):
		return "3 to 63 of a-z 0-9 . -, starting and ending with a letter or digit"
	case strings.Contains(b, ".."):
		return "two adjacent dots"
	case net.ParseIP(b) != nil:
		return "formatted as an IP address"
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(b, p) {
			return "reserved prefix " + p
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(b, s) {
			return "reserved suffix " + s
		}
	}
	return ""
}

// parseInstant parses a time given as RFC 3339 (any offset) or YYYY-MM-DD
// (midnight UTC), returned in UTC; report.start and the --from, --to and
// --now flags use it.
func parseInstant(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 or YYYY-MM-DD", s)
	}
	return t.UTC(), nil
}

// shortDuration formats 1h0m0s as 1h and 15m0s as 15m.
func cfgDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "h0m0s") {
		return strings.TrimSuffix(s, "0m0s")
	}
	return strings.TrimSuffix(s, "0s")
}

// suggest returns "; did you mean X?" for the candidate closest to s
// (ignoring case, at most 2 edits apart), or "".
func cfgSuggest(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if dist := editDistance(strings.ToLower(s), strings.ToLower(c)); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

package config

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/suggest"
)

// decoder collects every error instead of stopping at the first.
type decoder struct {
	v        *viper.Viper
	src      map[string]string // key path -> where its value came from
	known    map[string]bool   // every leaf key path
	lists    map[string]bool   // the leaf keys that take a list
	agencies map[string]pricing.Schedule
	// defaultRates is commission.default_bps when the file gives a list.
	defaultRates pricing.Schedule
	// env is the environment (os.Environ() form): delivery's *_env keys
	// must name a variable that is set.
	env []string
	// webhooks is delivery.webhooks as read from the file (nil: absent).
	webhooks []Webhook
	errs     []error
}

func (d *decoder) fail(key, value, reason string) {
	d.errs = append(d.errs, &Error{Key: key, Value: value, Reason: reason, Source: d.src[key]})
}

// walk checks mapping n at prefix against the known keys and puts its leaf
// values, as strings ([]string for lists), into the nested map out.
func (d *decoder) walk(name, prefix string, n *yaml.Node, out map[string]any) {
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
		case path == webhooksKey:
			d.readWebhooks(name, vn)
		case path == emailPasswordKey:
			d.fail(path, "...", "a password in the config file is refused: name an environment variable in delivery.email.password_env, or a file in password_file")
		case path == defaultBPSKey && vn.Kind == yaml.SequenceNode:
			if s, ok := d.schedule(path, vn, true); ok {
				d.defaultRates = s
			}
		case path == formatsKey:
			d.fail(path, yamlSummary(vn), formatsRemoved)
		case d.lists[path]:
			if l := d.list(path, vn); l != nil { // nil: error reported
				out[kn.Value] = l
			}
		case d.known[path]:
			if vn.Kind != yaml.ScalarNode {
				d.fail(path, yamlSummary(vn), "must be a single value, not a list or mapping")
				continue
			}
			out[kn.Value] = yamlScalar(vn)
		case d.isSection(path):
			if vn.Kind == yaml.ScalarNode && vn.Tag == "!!null" {
				continue // "report:" with nothing under it
			}
			if vn.Kind != yaml.MappingNode {
				d.fail(path, yamlSummary(vn), "must be a mapping of keys")
				continue
			}
			sub := map[string]any{}
			d.walk(name, path, vn, sub)
			out[kn.Value] = sub
		default:
			d.fail(path, yamlSummary(vn), "unknown key"+suggest.Hint(path, d.allPaths()))
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

// list reads a YAML sequence of scalars, or one comma-separated scalar
// ("" and null are the empty list).
func (d *decoder) list(path string, n *yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return splitList(yamlScalar(n))
	case yaml.SequenceNode:
		l := []string{}
		for _, e := range n.Content {
			if e = yamlDeref(e); e.Kind != yaml.ScalarNode {
				d.fail(path, yamlSummary(n), "must be a list of single values, such as [a, b]")
				return nil
			}
			l = append(l, strings.TrimSpace(yamlScalar(e)))
		}
		return l
	}
	d.fail(path, yamlSummary(n), "must be a list, such as [a, b]")
	return nil
}

// splitList splits a comma-separated list; empty items are dropped, so ""
// is the empty list.
func splitList(s string) []string {
	l := []string{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			l = append(l, f)
		}
	}
	return l
}

func (d *decoder) isSection(path string) bool {
	for k := range d.known {
		if strings.HasPrefix(k, path+".") {
			return true
		}
	}
	return false
}

func (d *decoder) allPaths() []string {
	var l []string
	for k := range d.known {
		for p := k; p != ""; {
			l = append(l, p)
			i := strings.LastIndexByte(p, '.')
			p = p[:max(i, 0)]
		}
	}
	l = append(l, agenciesKey, webhooksKey)
	slices.Sort(l) // a deterministic suggestion on ties
	return slices.Compact(l)
}

func (d *decoder) readAgencies(name string, n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(agenciesKey, yamlSummary(n), "must be a mapping of agency id to commission bps (or a list of dated rates)")
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
		if reason := item.AgencyIDProblem(id); kn.Kind != yaml.ScalarNode || reason != "" {
			d.fail(key, yamlSummary(vn), "bad agency id: "+orDefault(reason, "not a plain name"))
			continue
		}
		if s, ok := d.schedule(key, vn, false); ok {
			d.agencies[id] = s
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// applyEnv sets each REPORTJOB_* variable over the file and defaults. The
// mapping is built from configKeys, not viper's AutomaticEnv, because "_"
// is both the separator and part of key names (max_periods_per_run).
func (d *decoder) applyEnv(env []string) {
	byEnv := map[string]string{}
	var names []string
	for k := range d.known {
		byEnv[EnvName(k)] = k
		names = append(names, EnvName(k))
	}
	slices.Sort(names)
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || name == EnvConfigPath {
			continue
		}
		path, ok := byEnv[name]
		switch {
		case name == EnvName(agenciesKey):
			d.errs = append(d.errs, &Error{Key: name, Value: val, Source: "environment",
				Reason: "commission.agencies cannot be set from the environment; set it in the config file"})
		case name == EnvName(webhooksKey):
			d.errs = append(d.errs, &Error{Key: name, Value: "...", Source: "environment",
				Reason: "delivery.webhooks cannot be set from the environment; set it in the config file (the secrets stay in the variables its secret_env names)"})
		case name == EnvName(emailPasswordKey):
			d.errs = append(d.errs, &Error{Key: name, Value: "...", Source: "environment",
				Reason: "no such key: name the variable holding the password in delivery.email.password_env"})
		case name == EnvName(formatsKey):
			d.errs = append(d.errs, &Error{Key: name, Value: val, Source: "environment", Reason: formatsRemoved})
		case !ok:
			// The value is not echoed: it may be a credential meant for
			// another program, or for a key whose name has a typo.
			d.errs = append(d.errs, &Error{Key: name, Value: "...", Source: "environment",
				Reason: "unknown variable: no such config key" + suggest.Hint(name, names)})
		case d.lists[path]:
			d.v.Set(path, splitList(val))
			d.src[path] = name
		default:
			d.v.Set(path, val)
			d.src[path] = name
		}
	}
}

func (d *decoder) str(key string) string { return d.v.GetString(key) }

// strs returns a list key's value, never nil.
func (d *decoder) strs(key string) []string {
	l := d.v.GetStringSlice(key)
	if l == nil {
		l = []string{}
	}
	return l
}

func (d *decoder) intIn(key, s string, lo, hi int) (int, bool) {
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

func (d *decoder) int(key string, lo, hi int) int {
	n, _ := d.intIn(key, d.str(key), lo, hi)
	return n
}

func (d *decoder) bool(key string) bool {
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

func (d *decoder) oneOf(key string, allowed ...string) string {
	s := d.str(key)
	if !slices.Contains(allowed, s) {
		d.fail(key, s, "must be one of "+strings.Join(allowed, ", "))
	}
	return s
}

func (d *decoder) httpURL(key string) string {
	s := d.str(key)
	if s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.fail(key, redactURL(s), `must be "" or an http:// or https:// URL with a host`)
	}
	return s
}

// redactURL hides the user information of a URL (a Pushgateway's
// user:password), also in one that does not parse, so that the message of
// a bad value cannot leak a credential.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		if u.User == nil {
			return s
		}
		u.User = url.User("xxxxx")
		return u.String()
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s, "//"); i >= 0 && i < at {
		start = i + 2
	}
	return s[:start] + "xxxxx" + s[at:]
}

func (d *decoder) nonEmpty(key string, max int) string {
	s := d.str(key)
	switch {
	case s == "":
		d.fail(key, s, "must not be empty")
	case len(s) > max:
		d.fail(key, s, fmt.Sprintf("longer than %d bytes", max))
	}
	return s
}

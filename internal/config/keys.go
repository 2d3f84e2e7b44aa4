package config

import "strings"

// Key describes one key of config.yaml, for documentation checks (the
// README's configuration table is tested against Keys).
type Key struct {
	// Path is the dotted key path, such as "report.lateness".
	Path string
	// Default is the built-in value as written in YAML: `""` for an empty
	// string, "[a, b]" for a list, "{}" for commission.agencies.
	Default string
	// List is true for a key that takes a list.
	List bool
}

// Keys returns every key of the configuration, in file order, with its
// default; commission.agencies and delivery.webhooks (read from the file only) last.
func Keys() []Key {
	out := make([]Key, 0, len(configKeys)+1)
	for _, k := range configKeys {
		switch v := k.def.(type) {
		case []string:
			out = append(out, Key{Path: k.path, Default: "[" + strings.Join(v, ", ") + "]", List: true})
		case string:
			if v == "" {
				v = `""`
			}
			out = append(out, Key{Path: k.path, Default: v})
		}
	}
	return append(out, Key{Path: agenciesKey, Default: "{}"}, Key{Path: webhooksKey, Default: "[]", List: true})
}

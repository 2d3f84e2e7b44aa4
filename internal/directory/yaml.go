package directory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/reportjob/reportjob/internal/suggest"
	"go.yaml.in/yaml/v3"
)

// MaxYAMLSize is the largest YAML directory read: a YAML file is parsed
// whole into a node tree (about 5 KB of memory per agency), so a large
// directory must be CSV for a close to stay inside the memory target.
const MaxYAMLSize = 4 << 20

// parseYAML reads a YAML directory: a mapping "agencies:" from agency id
// to the CSV's columns (address and emails as lists). An agency is named
// by its id and the line of its key.
func parseYAML(name string, data []byte) (*Directory, error) {
	c := newCollector(name)
	if len(data) > MaxYAMLSize {
		c.fail("", "", "", fmt.Sprintf("%d bytes of YAML: at most %d (about 30,000 agencies), because YAML is read whole into a document tree (100,000 agencies took 520 MB); write a directory this size as CSV", len(data), MaxYAMLSize))
		return c.result()
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.fail("", "", "", "empty file: want a mapping agencies: {ID: {legal_name: ...}}")
		} else {
			c.fail("", "", "", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return c.result()
	}
	root := deref(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = deref(root.Content[0])
	}
	if root.Kind != yaml.MappingNode {
		c.fail(fmt.Sprintf("line %d", root.Line), "", "", "the top level must be a mapping with the key agencies")
		return c.result()
	}
	var agencies *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := deref(root.Content[i]), deref(root.Content[i+1])
		if k.Value != "agencies" {
			c.fail(fmt.Sprintf("line %d", k.Line), "key", k.Value, "unknown key"+suggest.Hint(k.Value, []string{"agencies"}))
			continue
		}
		agencies = v
	}
	switch {
	case agencies == nil:
		if len(c.errs) == 0 {
			c.fail("", "", "", "no key agencies: want a mapping agencies: {ID: {legal_name: ...}}")
		}
		return c.result()
	case agencies.Kind == yaml.ScalarNode && agencies.Tag == "!!null":
		return c.result() // an empty directory
	case agencies.Kind != yaml.MappingNode:
		c.fail(fmt.Sprintf("line %d", agencies.Line), "agencies", summary(agencies), "must be a mapping of agency id to its details")
		return c.result()
	}
	for i := 0; i+1 < len(agencies.Content); i += 2 {
		k, v := deref(agencies.Content[i]), deref(agencies.Content[i+1])
		row := fmt.Sprintf("agency %s (line %d)", strconv.Quote(k.Value), k.Line)
		if k.Kind != yaml.ScalarNode {
			c.fail(fmt.Sprintf("line %d", k.Line), "agency_id", summary(k), "must be a plain name")
			continue
		}
		if v.Kind != yaml.MappingNode {
			c.fail(row, "agencies."+k.Value, summary(v), "must be a mapping such as {legal_name: Acme Ltd}")
			continue
		}
		c.yamlAgency(row, fmt.Sprintf("line %d", k.Line), k.Value, v)
	}
	return c.result()
}

// yamlAgency reads one agency's mapping n.
func (c *collector) yamlAgency(row, at, id string, n *yaml.Node) {
	r := raw{id: id}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		key := k.Value
		if seen[key] {
			c.fail(row, key, summary(v), "key given twice")
			continue
		}
		seen[key] = true
		switch key {
		case "address", "emails":
			l, ok := c.yamlList(row, key, v)
			if !ok {
				continue
			}
			if key == "address" {
				r.address = l
			} else {
				r.emails = l
			}
		case "legal_name", "country", "tax_id", "locale", "payment_terms":
			if v.Kind != yaml.ScalarNode {
				c.fail(row, key, summary(v), "must be a single value, not a list or mapping")
				if key == "legal_name" {
					r.legalName = summary(v) // given: not also "required"
				}
				continue
			}
			s := strings.TrimSpace(scalar(v))
			switch key {
			case "legal_name":
				r.legalName = s
			case "country":
				r.country = s
			case "tax_id":
				r.taxID = s
			case "locale":
				r.locale = s
			case "payment_terms":
				r.terms = s
			}
		default:
			c.fail(row, key, summary(v), "unknown key"+suggest.Hint(key, slices.DeleteFunc(slices.Clone(columns),
				func(s string) bool { return s == "agency_id" })))
		}
	}
	c.add(row, at, r) // with errors above, the entry is never returned

}

// yamlList reads a list of scalars; a single scalar is split as the CSV
// cell is (address at newlines, emails at ";").
func (c *collector) yamlList(row, key string, v *yaml.Node) ([]string, bool) {
	sep := ";"
	if key == "address" {
		sep = "\n"
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return splitList(scalar(v), sep), true
	case yaml.SequenceNode:
		var l []string
		for _, e := range v.Content {
			if e = deref(e); e.Kind != yaml.ScalarNode {
				c.fail(row, key, summary(v), "must be a list of single values")
				return nil, false
			}
			if s := strings.TrimSpace(scalar(e)); s != "" {
				l = append(l, s)
			}
		}
		return l, true
	}
	c.fail(row, key, summary(v), "must be a list")
	return nil, false
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func scalar(n *yaml.Node) string {
	if n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

func summary(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "{...}"
	case yaml.SequenceNode:
		return "[...]"
	}
	return scalar(n)
}

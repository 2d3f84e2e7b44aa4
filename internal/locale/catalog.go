package locale

import (
	"embed"
	"fmt"
	"path"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:embed catalogs/*.yaml
var catalogFiles embed.FS

// catalogs is every embedded catalog by language. The files are part of
// the binary and TestCatalogsComplete reads them all, so a broken one is a
// bug caught by the tests: it panics rather than print a half-translated
// statement.
var catalogs = sync.OnceValue(func() map[string]map[string]string {
	cats, err := loadCatalogs()
	if err != nil {
		panic(err)
	}
	return cats
})

// loadCatalogs reads catalogs/<language>.yaml: a flat map of key to text.
func loadCatalogs() (map[string]map[string]string, error) {
	entries, err := catalogFiles.ReadDir("catalogs")
	if err != nil {
		return nil, fmt.Errorf("locale catalogs: %w", err)
	}
	cats := make(map[string]map[string]string, len(entries))
	for _, e := range entries {
		name := path.Join("catalogs", e.Name())
		data, err := catalogFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("locale catalog %s: %w", name, err)
		}
		cat, err := parseCatalog(data)
		if err != nil {
			return nil, fmt.Errorf("locale catalog %s: %w", name, err)
		}
		cats[strings.TrimSuffix(e.Name(), ".yaml")] = cat
	}
	if _, ok := cats["en"]; !ok {
		return nil, fmt.Errorf("locale catalogs: no en.yaml")
	}
	return cats, nil
}

// parseCatalog reads one catalog; every value must be a string.
func parseCatalog(data []byte) (map[string]string, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	cat := make(map[string]string, len(raw))
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("key %q: value %v is not a string (quote it)", k, v)
		}
		cat[k] = s
	}
	return cat, nil
}

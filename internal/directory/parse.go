package directory

import (
	"fmt"
	"path"
	"strings"
)

// Parse reads the directory file name (used in messages and to choose the
// format by its extension: .csv, .yaml or .yml) from data. Every bad row
// is reported: the errors are joined (at most maxErrors, then "and N
// more"), and each wraps ErrInvalid.
func Parse(name string, data []byte) (*Directory, error) {
	switch strings.ToLower(path.Ext(name)) {
	case ".csv":
		return parseCSV(name, data)
	case ".yaml", ".yml":
		return parseYAML(name, data)
	}
	return nil, fmt.Errorf("directory %s: %w: the name must end in .csv, .yaml or .yml", name, ErrInvalid)
}

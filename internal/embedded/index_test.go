package embedded

import (
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// TestIndexConformance runs the index suite through the Store, which
// embeds a dedupeindex.Index over its file (package dedupeindex tests the
// index itself).
func TestIndexConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) collect.Index {
		return open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
	})
}

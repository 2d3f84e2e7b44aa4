package embedded

import (
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/storetest"
)

// TestIndexConformance runs the index suite through the Store, which
// embeds a dedupeindex.Index over its file (package dedupeindex tests the
// index itself).
func TestIndexConformance(t *testing.T) {
	storetest.RunIndex(t, func(t *testing.T) storetest.Backend {
		s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
		return storetest.Backend{Index: s}
	})
}

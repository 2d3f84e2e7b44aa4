package dynamodb

import (
	"testing"

	"github.com/reportjob/reportjob/internal/storetest"
)

// TestIndexConformance runs the index suite through the Store, which
// embeds a dedupeindex.Index over its state table (package dedupeindex
// tests the index itself).
func TestIndexConformance(t *testing.T) {
	storetest.RunIndex(t, func(t *testing.T) storetest.Backend {
		return storetest.Backend{Index: newStore(t, nil)}
	})
}

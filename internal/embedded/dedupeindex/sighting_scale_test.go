package dedupeindex

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
)

// recordSightingsTime records n sightings of ids of mixed lengths, in id
// order (as Dedupe passes them), in one call, and returns how long it took.
func recordSightingsTime(t *testing.T, n int) time.Duration {
	t.Helper()
	ix := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	p := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := make([]collect.Sighting, n)
	for i := range ss {
		ss[i] = collect.Sighting{ID: fmt.Sprintf("tx-1-%d", i), Period: p, Kind: collect.SightingDropped, Expires: p.Add(36 * 24 * time.Hour)}
	}
	slices.SortFunc(ss, func(a, b collect.Sighting) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	start := time.Now()
	if err := ix.RecordSightings(t.Context(), "j", ss, p); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestRecordSightingsScales: recording a period's sightings takes time in
// proportion to their number. A producer that re-sends a whole period
// into the next makes every item a sighting (a copy dropped across
// periods): 200,000 of them must not take minutes (the run's lease).
//
// Fails on review3's base (df7ece9): the ids come in id order, but the keys
// sort by uvarint(len(id)) first, so with ids of mixed lengths each Put
// lands inside bbolt's (unsplit, in-transaction) leaf and moves the rest:
// quadratic (100,000: ~32 s; in key order: ~1 s).
func TestRecordSightingsScales(t *testing.T) {
	if testing.Short() {
		t.Skip("records 100,000 sightings")
	}
	small := recordSightingsTime(t, 12_500)
	big := recordSightingsTime(t, 100_000)
	t.Logf("12,500 sightings: %v; 100,000: %v (%.1fx for 8x as many)", small, big, float64(big)/float64(small))
	if big > 15*time.Second {
		t.Errorf("100,000 sightings took %v (12,500: %v): want well under 15s", big, small)
	}
}

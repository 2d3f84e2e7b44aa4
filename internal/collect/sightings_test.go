package collect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/item"
)

// sightingBatches is a SightingIndex that records the size of each
// RecordSightings.
type sightingBatches struct {
	collect.SightingIndex
	sizes []int
}

func (x *sightingBatches) RecordSightings(ctx context.Context, job string, ss []collect.Sighting, sweep time.Time) error {
	x.sizes = append(x.sizes, len(ss))
	return x.SightingIndex.RecordSightings(ctx, job, ss, sweep)
}

// TestSightingsRecordedInBatches: a period whose items are all copies of
// transactions an earlier period billed (a producer's replay) records
// their sightings as the dedupe goes, in batches of at most about 10,000,
// not all at its end: its memory does not grow with the copies. Every
// sighting is recorded. (Found by review: 500,000 such copies took 358 to
// 494 MB.)
func TestSightingsRecordedInBatches(t *testing.T) {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 25_000
	var first, again []item.Item
	for i := range n {
		id := fmt.Sprintf("tx-%06d", i)
		first = append(first, tx(id, "a", 100, p10.Start.Add(time.Duration(i)*time.Millisecond)))
		again = append(again, tx(id, "a", 100, p11.Start.Add(time.Duration(i)*time.Millisecond)))
	}
	put(t, s, first...)
	put(t, s, again...)
	ix := &sightingBatches{SightingIndex: s}
	if o := run(t, s, p10, ix, true); o.stats.Transactions != n {
		t.Fatalf("p10 billed %d, want %d", o.stats.Transactions, n)
	}
	ix.sizes = nil
	o := run(t, s, p11, ix, true)
	if o.stats.DuplicatesAcrossPeriods != n {
		t.Fatalf("p11: %d duplicates across periods, want %d", o.stats.DuplicatesAcrossPeriods, n)
	}
	total := 0
	for _, size := range ix.sizes {
		if size > 10_000+collect.MaxLookup {
			t.Errorf("RecordSightings of %d sightings at once", size)
		}
		total += size
	}
	if total != n || len(ix.sizes) < 3 {
		t.Errorf("sightings recorded in batches %v (%d), want %d in 3 or more", ix.sizes, total, n)
	}
	for _, id := range []string{"tx-000000", "tx-012345", "tx-024999"} {
		ss, err := s.Sightings(context.Background(), "job", id)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 1 || ss[0].Kind != collect.SightingDropped || !ss[0].Period.Equal(p11.Start) {
			t.Errorf("sightings of %s: %+v", id, ss)
		}
	}
}

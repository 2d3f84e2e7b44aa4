package dedupeindex

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
)

// idOrderSightings are n sightings of ids of mixed lengths, in id order
// (as Dedupe passes them).
func idOrderSightings(n int) []collect.Sighting {
	p := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := make([]collect.Sighting, n)
	for i := range ss {
		ss[i] = collect.Sighting{ID: fmt.Sprintf("tx-1-%d", i), Period: p, Kind: collect.SightingDropped, Expires: p.Add(36 * 24 * time.Hour)}
	}
	slices.SortFunc(ss, func(a, b collect.Sighting) int { return strings.Compare(a.ID, b.ID) })
	return ss
}

// TestSightingsPutInKeyOrder: RecordSightings puts a period's sightings
// in the order of their keys, not of their ids (the keys sort by the id's
// length first): put in id order, a period of 200,000 re-sent copies took
// minutes (each Put moved the rest of bbolt's unsplit leaf) and lost the
// run's lease. BenchmarkRecordSightings measures it.
func TestSightingsPutInKeyOrder(t *testing.T) {
	ss := idOrderSightings(2000)
	ss = append(ss, ss[0]) // a repeat keeps its place after the first
	ss[len(ss)-1].Kind = collect.SightingDropped
	keyed := keyedSightings(ss)
	if len(keyed) != len(ss) {
		t.Fatalf("%d keyed, want %d", len(keyed), len(ss))
	}
	for i := 1; i < len(keyed); i++ {
		if c := bytes.Compare(keyed[i-1].key, keyed[i].key); c > 0 || c == 0 && keyed[i-1].s != &ss[0] {
			t.Fatalf("key %d (%s) after key %d (%s): not in key order", i, keyed[i].s.ID, i-1, keyed[i-1].s.ID)
		}
	}
}

// BenchmarkRecordSightings records 100,000 sightings of a period in one
// call, ids in id order (32 s before they were put in key order; ~1 s
// after).
//
//	go test ./internal/embedded/dedupeindex -run '^$' -bench RecordSightings -count 6
func BenchmarkRecordSightings(b *testing.B) {
	ss := idOrderSightings(100_000)
	for b.Loop() {
		b.StopTimer()
		ix := openIndex(b, filepath.Join(b.TempDir(), "store.db"))
		b.StartTimer()
		if err := ix.RecordSightings(b.Context(), "j", ss, ss[0].Period); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ss)*b.N)/b.Elapsed().Seconds(), "sightings/s")
}

package dynamodb

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
)

// BenchmarkIngestQuery writes 50,000 transaction-sized items over 8
// partitions with one PutItems call, then reads them back with Query, one
// partition at a time and all partitions at once. Run it with
//
//	go test -run '^$' -bench IngestQuery -benchtime 1x ./internal/dynamodb/
func BenchmarkIngestQuery(b *testing.B) {
	const n, parts = 50_000, 8
	r := rand.New(rand.NewPCG(3, 4))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	items := make([]item.Item, n)
	pks := make([]string, parts)
	for p := range pks {
		pks[p] = start.Add(time.Duration(p) * 15 * time.Minute).Format("200601021504")
	}
	for i := range items {
		p := i % parts
		at := start.Add(time.Duration(p)*15*time.Minute + time.Duration(r.IntN(900))*time.Second)
		items[i] = item.Item{
			PK: pks[p],
			SK: seedSortKey(at, r),
			Attrs: map[string]item.Value{
				item.AttrTransactionID: item.S(fmt.Sprintf("tx-%08d", i)),
				item.AttrAgencyID:      item.S(fmt.Sprintf("agency-%03d", r.IntN(200))),
				item.AttrAmount:        item.N(fmt.Sprintf("%d.%02d", 1+r.IntN(500), r.IntN(100))),
				item.AttrCurrency:      item.S("USD"),
				item.AttrCustomerID:    item.S(fmt.Sprintf("customer-%06d", r.IntN(1e6))),
				item.AttrProductID:     item.S(fmt.Sprintf("product-%04d", r.IntN(1e4))),
				item.AttrRecordedAt:    item.S(at.Format(time.RFC3339)),
			},
		}
	}
	for b.Loop() {
		s := newStore(b, nil)

		t0 := time.Now()
		if err := s.PutItems(b.Context(), items); err != nil {
			b.Fatalf("PutItems: %v", err)
		}
		ingest := time.Since(t0)

		t0 = time.Now()
		got := 0
		for _, pk := range pks {
			if err := s.Query(b.Context(), pk, "", func(page []item.Item) error { got += len(page); return nil }); err != nil {
				b.Fatalf("Query: %v", err)
			}
		}
		seq := time.Since(t0)
		if got != n {
			b.Fatalf("Query read %d items, want %d", got, n)
		}

		t0 = time.Now()
		var wg sync.WaitGroup
		counts := make([]int, parts)
		for p, pk := range pks {
			wg.Go(func() {
				if err := s.Query(b.Context(), pk, "", func(page []item.Item) error { counts[p] += len(page); return nil }); err != nil {
					b.Errorf("Query: %v", err)
				}
			})
		}
		wg.Wait()
		par := time.Since(t0)

		b.ReportMetric(float64(n)/ingest.Seconds(), "ingest_items/s")
		b.ReportMetric(float64(n)/seq.Seconds(), "query_items/s")
		b.ReportMetric(float64(n)/par.Seconds(), "query8_items/s")
		b.Logf("%d items: PutItems %s (%.0f items/s, %d batches in flight); Query %s sequential (%.0f items/s), %s with %d partitions at once (%.0f items/s)",
			n, ingest.Round(time.Millisecond), float64(n)/ingest.Seconds(), s.opts.WriteConcurrency,
			seq.Round(time.Millisecond), float64(n)/seq.Seconds(), par.Round(time.Millisecond), parts, float64(n)/par.Seconds())
	}
}

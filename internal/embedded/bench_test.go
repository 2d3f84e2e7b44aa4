package embedded

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/item"
)

// benchItems returns n transaction-shaped items of one partition.
func benchItems(pk string, from, n int) []item.Item {
	items := make([]item.Item, n)
	for i := range items {
		id := fmt.Sprintf("tx-%09d", from+i)
		items[i] = item.Item{PK: pk, SK: fmt.Sprintf("2024-01-01T00:%02d:%02d.%016d", (from+i)/60%60, (from+i)%60, from+i),
			Attrs: map[string]item.Value{
				item.AttrTransactionID: item.S(id),
				item.AttrAgencyID:      item.S(fmt.Sprintf("agency-%03d", i%50)),
				item.AttrAmount:        item.N("19.99"),
				item.AttrCurrency:      item.S("USD"),
				item.AttrKind:          item.S("purchase"),
				item.AttrCustomerID:    item.S("customer-12345"),
				item.AttrProductID:     item.S("product-678"),
				item.AttrRecordedAt:    item.S("2024-01-01T00:00:00.123Z"),
			}}
	}
	return items
}

// BenchmarkPutItems writes batches of 500 items, one transaction (and one
// fsync) each, as `ingest` does.
func BenchmarkPutItems(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "store.db"), Options{})
	const batch = 500
	n := 0
	for b.Loop() {
		if err := s.PutItems(b.Context(), benchItems("202401010000", n, batch)); err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
}

// benchTotal is the items of benchPartition's one partition.
const benchTotal = 20000

// benchPartition is a store holding one partition of benchTotal items.
func benchPartition(b *testing.B) *Store {
	s := open(b, filepath.Join(b.TempDir(), "store.db"), Options{})
	for i := 0; i < benchTotal; i += 1000 {
		if err := s.PutItems(b.Context(), benchItems("202401010000", i, 1000)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkQuery reads a partition of 20,000 items.
func BenchmarkQuery(b *testing.B) {
	s := benchPartition(b)
	n := 0
	for b.Loop() {
		err := s.Query(b.Context(), "202401010000", "", func(p []item.Item) error { n += len(p); return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	if n%benchTotal != 0 {
		b.Fatalf("read %d items, want a multiple of %d", n, benchTotal)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkDecodeRecord decodes one stored transaction-shaped item into an
// item.Record (what a period's read does per item); ItemContract is the
// map way it replaced: decodeItem, then Item.Contract.
func BenchmarkDecodeRecord(b *testing.B) {
	it := benchItems("202401010000", 7, 1)[0]
	k, v := []byte(it.SK), encodeAttrs(it.Attrs)
	b.Run("Record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r item.Record
			err := decodeRecord(it.PK, k, v, &r, nil)
			if err != nil || r.Present == 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("ItemContract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sk, attrs, err := decodeItem(k, v)
			it := item.Item{PK: it.PK, SK: sk, Attrs: attrs}
			if _, present := it.Contract(); err != nil || present == 0 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkQueryRecords is BenchmarkQuery with QueryRecords: what a
// period's read calls.
func BenchmarkQueryRecords(b *testing.B) {
	s := benchPartition(b)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		err := s.QueryRecords(b.Context(), "202401010000", "", func(p []item.Record) error { n += len(p); return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	if n%benchTotal != 0 {
		b.Fatalf("read %d items, want a multiple of %d", n, benchTotal)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
}

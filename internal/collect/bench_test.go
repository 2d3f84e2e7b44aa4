package collect_test

import (
	"context"
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"path/filepath"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
)

// memSource serves one partition's items from memory, in pages of 1000
// (fresh items each time, as the stores give them), so that a benchmark
// measures collect and not a store.
type memSource struct {
	pk    string
	items []item.Item
}

func (m *memSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	if pk != m.pk {
		return nil
	}
	page := make([]item.Item, 0, 1000)
	for i := 0; i < len(m.items); i += 1000 {
		page = page[:0]
		for _, it := range m.items[i:min(i+1000, len(m.items))] {
			attrs := make(map[string]item.Value, len(it.Attrs))
			for k, v := range it.Attrs {
				attrs[k] = v
			}
			page = append(page, item.Item{PK: it.PK, SK: it.SK, Attrs: attrs})
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// benchItems are n transactions of one partition, 1 in 50 sent twice.
func benchItems(n int) []item.Item {
	var items []item.Item
	for i := range n {
		t := item.Transaction{
			ID: fmt.Sprintf("tx-1-%d", i+1), AgencyID: fmt.Sprintf("agency-%04d", i%500+1),
			CustomerID: fmt.Sprintf("cust-%06d", i%200_000+1), ProductID: fmt.Sprintf("prod-%04d", i%5000+1),
			Kind: item.Purchase, Currency: usd, Amount: int64(100 + i%10_000),
			RecordedAt: p10.Start.Add(time.Duration(i) * 17 * time.Millisecond % time.Hour),
		}
		t.PK, t.SK = keys.ForTransaction(t.ID, t.RecordedAt, 0)
		items = append(items, t.Item())
		if i%50 == 0 {
			items = append(items, t.Item())
		}
	}
	return items
}

// benchStore is an embedded store of benchItems(n), closed with b.
func benchStore(b *testing.B, n int) *embedded.Store {
	s, err := embedded.Open(filepath.Join(b.TempDir(), "store.db"), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	items := benchItems(n)
	for i := 0; i < len(items); i += 10_000 {
		if err := s.PutItems(context.Background(), items[i:min(i+10_000, len(items))]); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkReadEmbedded is BenchmarkReadDedupe's read (Read only: query,
// decode, fingerprint, validate, sort records) from an embedded store,
// 100,000 transactions: the store's decoding included.
//
//	go test ./internal/collect -run '^$' -bench ReadEmbedded -count 6
func BenchmarkReadEmbedded(b *testing.B) {
	const n = 100_000
	s := benchStore(b, n)
	ctx := context.Background()
	cpu := testenv.ProcessCPU()
	b.ReportAllocs()
	for b.Loop() {
		c, err := collect.Read(ctx, collect.Config{Concurrency: 1, Dir: b.TempDir()}, s, p10)
		if err != nil {
			b.Fatal(err)
		}
		if c.ItemsRead != n { // a copy with the same keys replaced its first
			b.Fatalf("read %d items, want %d", c.ItemsRead, n)
		}
		c.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu).Nanoseconds())/float64(n*b.N), "cpu-ns/item")
}

// BenchmarkReadEmbeddedJob is BenchmarkReadEmbedded as the job reads a
// period: 200,000 transactions spread over the hour's four partitions,
// read concurrently (Concurrency 4, as keys.concurrency's default allows),
// with Config.AgencyProblem set (the job always sets it). The four
// partitions' readers share one sorter.
//
//	go test ./internal/collect -run '^$' -bench ReadEmbeddedJob -count 6
func BenchmarkReadEmbeddedJob(b *testing.B) {
	const n = 200_000
	s := benchStore(b, n)
	cfg := collect.Config{Concurrency: 4, AgencyProblem: func(agency string) string {
		if len(agency) > 200 {
			return "too long"
		}
		return ""
	}}
	ctx := context.Background()
	cpu := testenv.ProcessCPU()
	b.ReportAllocs()
	for b.Loop() {
		cfg.Dir = b.TempDir()
		c, err := collect.Read(ctx, cfg, s, p10)
		if err != nil {
			b.Fatal(err)
		}
		if c.ItemsRead != n || len(c.Partitions) != 4 {
			b.Fatalf("read %d items of %d partitions, want %d of 4", c.ItemsRead, len(c.Partitions), n)
		}
		c.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu).Nanoseconds())/float64(n*b.N), "cpu-ns/item")
}

// BenchmarkReadDedupe reads 200,000 transactions of one partition (1 in
// 50 sent twice), fingerprints, validates and sorts them by id, and
// dedupes them within the period (no index): collect's own cost, in
// wall and CPU time.
//
//	go test ./internal/collect -run '^$' -bench ReadDedupe -count 6
func BenchmarkReadDedupe(b *testing.B) {
	const n = 200_000
	src := &memSource{items: benchItems(n)}
	src.pk = src.items[0].PK
	ctx := context.Background()
	cpu := testenv.ProcessCPU()
	for b.Loop() {
		c, err := collect.Read(ctx, collect.Config{Concurrency: 1, Dir: b.TempDir(), SortMemBytes: 16 << 20}, src, p10)
		if err != nil {
			b.Fatal(err)
		}
		billed := 0
		if _, err := c.Dedupe(ctx, collect.DedupeOptions{Job: "job", Now: p10.End}, func(*item.Transaction) error { billed++; return nil }); err != nil {
			b.Fatal(err)
		}
		c.Close()
		if billed != n {
			b.Fatalf("billed %d, want %d", billed, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	// CPU time (user and system, the source's included) is steadier than
	// wall time on a shared machine.
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu).Nanoseconds())/float64(n*b.N), "cpu-ns/tx")
}

// BenchmarkDedupeJob is the dedupe phase as the job runs it on the
// embedded store: 200,000 transactions of the hour's four partitions, read
// (outside the timer), then deduped with Concurrency 8 against the
// store's own dedupe-window index, the claims written (a first delivery:
// a job of its own each time). Wall and CPU of Dedupe alone.
//
//	go test ./internal/collect -run '^$' -bench DedupeJob -count 6
func BenchmarkDedupeJob(b *testing.B) {
	const n = 200_000
	s := benchStore(b, n)
	ctx := context.Background()
	var cpu time.Duration
	job := 0
	for b.Loop() {
		b.StopTimer()
		c, err := collect.Read(ctx, collect.Config{Concurrency: 8, Dir: b.TempDir()}, s, p10)
		if err != nil {
			b.Fatal(err)
		}
		job++
		b.StartTimer()
		cpu0 := testenv.ProcessCPU()
		billed := 0
		_, err = c.Dedupe(ctx, collect.DedupeOptions{Job: fmt.Sprint("job", job), Index: s, Window: 35 * 24 * time.Hour, Write: true, Now: p10.End},
			func(*item.Transaction) error { billed++; return nil })
		cpu += testenv.ProcessCPU() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if billed != n {
			b.Fatalf("billed %d, want %d", billed, n)
		}
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/tx")
}

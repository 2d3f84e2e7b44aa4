package report_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/report/sinktest"
)

var testPeriod = report.Period{
	Start: time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC),
	End:   time.Date(2024, 5, 1, 14, 0, 0, 0, time.UTC),
}

// genSource makes perQuarter items for every partition it is asked for,
// deterministically from the partition key, without storing them: memory
// measured in a build is the builder's own. Every 50th transaction is
// written twice (a producer's retry: same content, new sort key).
type genSource struct {
	perQuarter int
	agencies   int
	failPK     string // Query of this partition fails
}

func (s genSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	if pk == s.failPK {
		return errors.New("injected query failure")
	}
	q, shard, err := keys.ParsePartition(pk)
	if err != nil {
		return err
	}
	if shard != 0 || strings.Contains(pk, "#") {
		return nil // all items live in the plain partition
	}
	rng := rand.New(rand.NewPCG(uint64(q.Unix()), 7))
	curs := []string{"USD", "USD", "USD", "EUR", "JPY", "BHD"}
	amounts := map[string]func() string{
		"USD": func() string { return fmt.Sprintf("%d.%02d", 1+rng.IntN(500), rng.IntN(100)) },
		"EUR": func() string { return fmt.Sprintf("%d.%02d", 1+rng.IntN(500), rng.IntN(100)) },
		"JPY": func() string { return fmt.Sprint(100 + rng.IntN(50000)) },
		"BHD": func() string { return fmt.Sprintf("%d.%03d", 1+rng.IntN(100), rng.IntN(1000)) },
	}
	page := make([]item.Item, 0, 500)
	for i := 0; i < s.perQuarter; i++ {
		cur := curs[rng.IntN(len(curs))]
		at := q.Add(time.Duration(rng.IntN(900)) * time.Second)
		id := fmt.Sprintf("tx-%s-%d", pk, i)
		attrs := map[string]item.Value{
			"transaction_id": item.S(id),
			"agency_id":      item.S(fmt.Sprintf("agency-%03d", rng.IntN(s.agencies))),
			"amount":         item.N(amounts[cur]()),
			"currency":       item.S(cur),
		}
		if rng.IntN(20) == 0 {
			attrs["kind"] = item.S("refund")
		}
		if i%97 == 0 {
			attrs["currency"] = item.S("XXX") // a reject
		}
		page = append(page, item.Item{PK: pk, SK: keys.SortKey(at, keys.DerivedSuffix(id)), Attrs: attrs})
		if i%50 == 0 {
			page = append(page, item.Item{PK: pk, SK: keys.SortKey(at.Add(time.Second), keys.DerivedSuffix(id+"/retry")), Attrs: attrs})
		}
		if len(page) >= 450 {
			if err := fn(page); err != nil {
				return err
			}
			page = page[:0]
		}
	}
	if len(page) > 0 {
		return fn(page)
	}
	return nil
}

func newBuilder(src report.Source, sink report.Sink, runSize int) *report.Builder {
	return report.NewBuilder(report.Config{
		Job: "test", Shards: 2, LineItems: true, CSV: true, Concurrency: 4, DefaultBPS: 1000,
		AgencyBPS: map[string]int32{"agency-001": 1500}, RunSize: runSize, Version: "test",
		Now: func() time.Time { return time.Date(2024, 5, 1, 14, 5, 0, 0, time.UTC) },
	}, src, sink, slog.New(slog.DiscardHandler))
}

// TestBuildSpillSameBytes: a period spilled to disk in many sorted runs
// gives the same files, byte for byte, as one built in memory.
func TestBuildSpillSameBytes(t *testing.T) {
	src := genSource{perQuarter: 1500, agencies: 40}
	var sums [2]map[string][]byte
	for i, runSize := range []int{1 << 30, 97} {
		sink, err := filesink.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		m, err := newBuilder(src, sink, runSize).Build(context.Background(), testPeriod)
		if err != nil {
			t.Fatal(err)
		}
		// Per quarter: 16 items are rejects (i%97 == 0), item 0 twice (its
		// retry too); 30 retries (i%50 == 0) less item 0's are duplicates.
		if m.Transactions != 4*(1500-16) || m.DuplicatesDropped != 4*29 || m.Rejects != 4*17 {
			t.Fatalf("run size %d: %d transactions, %d duplicates, %d rejects", runSize, m.Transactions, m.DuplicatesDropped, m.Rejects)
		}
		objs, err := sink.List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = map[string][]byte{}
		for _, o := range objs {
			sums[i][o.Key] = sinktest.Get(t, sink, o.Key)
		}
	}
	if len(sums[0]) != len(sums[1]) || len(sums[0]) < 100 {
		t.Fatalf("%d objects in memory, %d spilled", len(sums[0]), len(sums[1]))
	}
	for k, b := range sums[0] {
		if string(sums[1][k]) != string(b) {
			t.Errorf("%s differs when spilled", k)
		}
	}
}

// failingSink fails the nth object write; everything else goes through.
type failingSink struct {
	report.Sink
	n     int64
	count atomic.Int64
}

func (s *failingSink) NewWriter(ctx context.Context, key, ct string) (report.ObjectWriter, error) {
	if s.count.Add(1) == s.n {
		return nil, fmt.Errorf("injected failure writing %s", key)
	}
	return s.Sink.NewWriter(ctx, key, ct)
}

// TestBuildFailureWritesNoManifest: when any object or partition fails,
// Build fails and writes no manifest, so the period is not delivered.
func TestBuildFailureWritesNoManifest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    genSource
		failAt int64
		want   string
	}{
		{"upload", genSource{perQuarter: 200, agencies: 10}, 7, "injected failure"},
		{"query", genSource{perQuarter: 200, agencies: 10, failPK: keys.Quarter(testPeriod.Start.Add(30 * time.Minute))}, 0, "query partition 202405011330"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := filesink.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			sink := &failingSink{Sink: fs, n: tc.failAt}
			_, err = newBuilder(tc.src, sink, 1000).Build(context.Background(), testPeriod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: %v, want an error containing %q", err, tc.want)
			}
			sinktest.RequireMissing(t, fs, "period="+testPeriod.Name()+"/manifest.json")
		})
	}
}

func TestPartitions(t *testing.T) {
	p := report.Period{Start: testPeriod.Start, End: testPeriod.Start.Add(30 * time.Minute)}
	for _, tc := range []struct {
		shards int
		want   string
	}{
		{1, "202405011300 202405011315"},
		{3, "202405011300 202405011300#0 202405011300#1 202405011300#2 202405011315 202405011315#0 202405011315#1 202405011315#2"},
	} {
		if got := strings.Join(report.Partitions(p, tc.shards), " "); got != tc.want {
			t.Errorf("shards %d: %s, want %s", tc.shards, got, tc.want)
		}
	}
}

// BenchmarkBuildPeriod builds one hourly period into a Discard sink and
// reports transactions/s and the peak heap, in memory and with spilling.
// Run: go test -run '^$' -bench BuildPeriod -benchtime 1x ./internal/report/
func BenchmarkBuildPeriod(b *testing.B) {
	for _, perQuarter := range []int{25_000, 100_000} {
		for _, runSize := range []int{200_000, 20_000} {
			b.Run(fmt.Sprintf("tx=%d/run=%d", 4*perQuarter, runSize), func(b *testing.B) {
				src := genSource{perQuarter: perQuarter, agencies: 300}
				for b.Loop() {
					peak := trackPeak()
					start := time.Now()
					m, err := newBuilder(src, report.Discard{}, runSize).Build(context.Background(), testPeriod)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(m.Transactions)/time.Since(start).Seconds(), "tx/s")
					b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
				}
			})
		}
	}
}

// trackPeak samples the heap in use until the returned func is called.
func trackPeak() func() uint64 {
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(stop); <-done; return peak.Load() }
}

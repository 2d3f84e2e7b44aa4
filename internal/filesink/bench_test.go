//go:build unix

package filesink

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/testenv"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// BenchmarkPut writes small files (2 KiB, a summary's size) as a period's
// publish does. Replace: under 500 agency folders, which exist after the
// first round. NewFolder: each file in a folder of its own, new (a
// period's first publish into an empty sink). Durable, or Deferred.
func BenchmarkPut(b *testing.B) {
	replace := func(i int) string { return fmt.Sprintf("2024-01/agency-%03d/summary.csv", i%500) }
	newFolder := func(i int) string { return fmt.Sprintf("2024-01/01/agency-%07d/summary.csv", i) }
	for _, bc := range []struct {
		name     string
		key      func(i int) string
		deferred bool
	}{
		{"Replace", replace, false},
		{"NewFolder", newFolder, false},
		// Deferred: a publication's Puts (no fsync until its Sync, which
		// is not timed here): the per-object cost that is left.
		{"ReplaceDeferred", replace, true},
		{"NewFolderDeferred", newFolder, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(filepath.Join(b.TempDir(), "reports"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			body := bytes.Repeat([]byte("agency,amount\n"), 2048/14)
			b.ReportAllocs()
			cpu0 := testenv.ProcessCPU()
			i := 0
			for b.Loop() {
				if _, err := s.Put(b.Context(), bc.key(i), bytes.NewReader(body), int64(len(body)), driver.PutOptions{Defer: bc.deferred}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(testenv.ProcessCPU()-cpu0)/float64(i), "cpu-ns/op")
		})
	}
}

// BenchmarkPublishFolders is a period's first publish of 500 agencies
// into an empty sink, as publish does it (4 uploads at a time): 500 small
// files, each in new folders of its own (agencies/agency=A/period=P/),
// then Sync. Durable: each Put makes itself durable (its fsyncs);
// Deferred: the Puts leave that to the one Sync (a publication's objects,
// PutOptions.Defer). One op is the whole period, in a new sink.
func BenchmarkPublishFolders(b *testing.B) {
	durableOrDeferred(b, func(b *testing.B, deferred bool) {
		cpu0 := testenv.ProcessCPU()
		n := 0
		for b.Loop() {
			s := newBenchSink(b)
			eachAgency(b, func(a int) error { return benchPut(b, s, benchKey(a, "summary"), deferred) })
			if err := s.Sync(b.Context()); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(testenv.ProcessCPU()-cpu0)/float64(n)/1e6, "cpu-ms/op")
	})
}

// BenchmarkCleanupFolders is the cleanup of a restated period of 500
// agencies: one replaced file deleted in each agency's folder (which keeps
// the new one), 4 at a time, then Sync. Durable: each Delete fsyncs its
// folder; Deferred: the deletes leave that to the one Sync. One op is the
// whole cleanup, in a new sink.
func BenchmarkCleanupFolders(b *testing.B) {
	durableOrDeferred(b, func(b *testing.B, deferred bool) {
		for b.Loop() {
			s := newBenchSink(b)
			b.StopTimer()
			eachAgency(b, func(a int) error {
				if err := benchPut(b, s, benchKey(a, "old"), true); err != nil {
					return err
				}
				return benchPut(b, s, benchKey(a, "new"), true)
			})
			if err := s.Sync(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			del := s.Delete
			if deferred {
				del = s.DeleteDeferred
			}
			eachAgency(b, func(a int) error { return del(b.Context(), benchKey(a, "old")) })
			if err := s.Sync(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const benchAgencies = 500

// durableOrDeferred runs bench as the sub-benchmarks Durable and Deferred.
func durableOrDeferred(b *testing.B, bench func(b *testing.B, deferred bool)) {
	for _, deferred := range []bool{false, true} {
		name := "Durable"
		if deferred {
			name = "Deferred"
		}
		b.Run(name, func(b *testing.B) { bench(b, deferred) })
	}
}

// newBenchSink is a new sink in a new folder, closed at the end of b
// (made and closed outside the timing).
func newBenchSink(b *testing.B) *Sink {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	s, err := New(filepath.Join(b.TempDir(), "reports"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchKey is agency a's file name in a period: each agency a folder.
func benchKey(a int, name string) string {
	return fmt.Sprintf("agencies/agency=%04d/period=20260101T0000Z/%s.csv", a, name)
}

var benchBody = bytes.Repeat([]byte("agency,amount\n"), 2048/14)

func benchPut(b *testing.B, s *Sink, key string, deferred bool) error {
	_, err := s.Put(b.Context(), key, bytes.NewReader(benchBody), int64(len(benchBody)), driver.PutOptions{Defer: deferred})
	return err
}

// eachAgency calls fn for every agency, 4 at a time (publish's default
// concurrency), failing b on an error.
func eachAgency(b *testing.B, fn func(a int) error) {
	const workers = 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for a := w; a < benchAgencies; a += workers {
				if err := fn(a); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// BenchmarkPublishLargeFiles is the publish of a period with line items:
// 48 files of 4 MiB (a 1M-transaction period's agency CSVs and Parquet
// are about 180 MB), deferred Puts 4 at a time, each after the SHA-256 of
// its bytes (the encoder hashes each file as it writes it: work the disk
// can overlap), then Sync. WriteOut is the driver as it is (each deferred
// Put starts its file's write-out); NoWriteOut leaves every write to the
// Sync, as before. sync-ms/op is the Sync's own wait.
func BenchmarkPublishLargeFiles(b *testing.B) {
	const files, size = 48, 4 << 20
	body := bytes.Repeat([]byte("tx-1-123456,agency-0031,cust-151198,prod-4811,purchase,BHD,100.125\r\n"), size/70)
	for _, bc := range []struct {
		name string
		wb   func(*os.File)
	}{{"NoWriteOut", func(*os.File) {}}, {"WriteOut", startWriteback}} {
		b.Run(bc.name, func(b *testing.B) {
			old := writeback
			writeback = bc.wb
			defer func() { writeback = old }()
			var syncTime time.Duration
			n := 0
			for b.Loop() {
				s := newBenchSink(b)
				var wg sync.WaitGroup
				for w := range 4 {
					wg.Go(func() {
						for f := w; f < files; f += 4 {
							sha256.Sum256(body)
							key := fmt.Sprintf("agencies/agency=%04d/period=20260101T0000Z/transactions.csv", f)
							if _, err := s.Put(b.Context(), key, bytes.NewReader(body), int64(len(body)), driver.PutOptions{Defer: true}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				start := time.Now()
				if err := s.Sync(b.Context()); err != nil {
					b.Fatal(err)
				}
				syncTime += time.Since(start)
				n++
			}
			b.ReportMetric(float64(syncTime.Milliseconds())/float64(n), "sync-ms/op")
		})
	}
}

//go:build unix

package filesink

import (
	"bytes"
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// BenchmarkPut writes small files (2 KiB, a summary's size) as a period's
// publish does. Replace: under 500 agency folders, which exist after the
// first round. NewFolder: each file in a folder of its own, new (a
// period's first publish into an empty sink).
func BenchmarkPut(b *testing.B) {
	for _, bc := range []struct {
		name string
		key  func(i int) string
	}{
		{"Replace", func(i int) string { return fmt.Sprintf("2024-01/agency-%03d/summary.csv", i%500) }},
		{"NewFolder", func(i int) string { return fmt.Sprintf("2024-01/01/agency-%07d/summary.csv", i) }},
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
				if _, err := s.Put(b.Context(), bc.key(i), bytes.NewReader(body), int64(len(body)), driver.PutOptions{}); err != nil {
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
	const agencies, workers = 500, 4
	for _, deferred := range []bool{false, true} {
		name := "Durable"
		if deferred {
			name = "Deferred"
		}
		b.Run(name, func(b *testing.B) {
			body := bytes.Repeat([]byte("agency,amount\n"), 2048/14)
			cpu0 := testenv.ProcessCPU()
			n := 0
			for b.Loop() {
				b.StopTimer()
				s, err := New(filepath.Join(b.TempDir(), "reports"))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					wg.Go(func() {
						for a := w; a < agencies; a += workers {
							key := fmt.Sprintf("agencies/agency=%04d/period=20260101T0000Z/summary.csv", a)
							if _, err := s.Put(b.Context(), key, bytes.NewReader(body), int64(len(body)), driver.PutOptions{Defer: deferred}); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				if err := s.Sync(b.Context()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
				n++
			}
			b.ReportMetric(float64(testenv.ProcessCPU()-cpu0)/float64(n)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkCleanupFolders is the cleanup of a restated period of 500
// agencies: one replaced file deleted in each agency's folder (which keeps
// the new one), 4 at a time, then Sync. Durable: each Delete fsyncs its
// folder; Deferred: the deletes leave that to the one Sync. One op is the
// whole cleanup, in a new sink.
func BenchmarkCleanupFolders(b *testing.B) {
	const agencies, workers = 500, 4
	for _, deferred := range []bool{false, true} {
		name := "Durable"
		if deferred {
			name = "Deferred"
		}
		b.Run(name, func(b *testing.B) {
			body := bytes.Repeat([]byte("agency,amount\n"), 2048/14)
			key := func(a int, name string) string {
				return fmt.Sprintf("agencies/agency=%04d/period=20260101T0000Z/%s.csv", a, name)
			}
			for b.Loop() {
				b.StopTimer()
				s, err := New(filepath.Join(b.TempDir(), "reports"))
				if err != nil {
					b.Fatal(err)
				}
				for a := range agencies {
					for _, n := range []string{"old", "new"} {
						if _, err := s.Put(b.Context(), key(a, n), bytes.NewReader(body), int64(len(body)), driver.PutOptions{Defer: true}); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := s.Sync(b.Context()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						for a := w; a < agencies; a += workers {
							del := s.Delete
							if deferred {
								del = s.DeleteDeferred
							}
							if err := del(b.Context(), key(a, "old")); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if err := s.Sync(b.Context()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}

//go:build unix

package filesink

import (
	"bytes"
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"path/filepath"
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

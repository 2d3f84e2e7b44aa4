package encode

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// BenchmarkPeriodAgencies encodes a period of 1,000 agencies with one
// purchase each (summary, line items, agency files [csv, parquet]: four
// small files per agency): the cost a period pays per agency. cpu-ns/agency
// is the process's CPU time (user and system), the encoders' goroutines
// included.
func BenchmarkPeriodAgencies(b *testing.B) {
	const n = 1000
	rows := make([]report.SummaryRow, n)
	lines := make([]report.LineItem, n)
	for i := range n {
		id := fmt.Sprintf("agency-%07d", i)
		rows[i] = sumRow(id, usd, 1, 0, "12.34", "0", "12.34", "1.23")
		lines[i] = genLineItem(0, 1)
		lines[i].Tx.AgencyID = id
	}
	dir := b.TempDir()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		w := NewWriter(dir, testPeriod, Formats{CSV: true, Parquet: true}, report.LatestParquetLayout,
			func(f File) error { f.Discard(); return nil })
		if err := w.Summary(rows); err != nil {
			b.Fatal(err)
		}
		for i := range lines {
			if err := w.Line(&lines[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.EndLines(); err != nil {
			b.Fatal(err)
		}
		w.Close()
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/agency")
	b.ReportMetric(0, "ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

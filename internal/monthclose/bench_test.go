package monthclose_test

import (
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement/pdf"
)

// BenchmarkDraftRevision is the statements' share of an hourly run: a
// draft month with 500 agencies (the first hour), then each op publishes
// one more hour with transactions of 10 of them and brings the draft up to
// date, PDFs (the real renderer) and CSVs. At most 22 ops (the hours left
// in January): -benchtime 20x.
func BenchmarkDraftRevision(b *testing.B) {
	t := &testing.T{}
	f := newFixture(t)
	f.t = t
	f.c.Formats = monthclose.Formats{PDF: true, CSV: true}
	f.c.RenderPDF = pdf.Render
	all := map[string]int64{}
	for i := range 500 {
		all[fmt.Sprintf("agency-%03d", i)] = int64(100 + i)
	}
	f.publish(hour(0), report.ReasonDelivery, all)
	if _, err := f.update(hour(1).Start, ""); err != nil {
		b.Fatal(err)
	}
	h := 1
	for b.Loop() {
		if h > 22 {
			b.Fatal("at most 22 ops: -benchtime 20x")
		}
		b.StopTimer()
		some := map[string]int64{}
		for i := range 10 {
			some[fmt.Sprintf("agency-%03d", (h*10+i)%500)] = 50
		}
		f.publish(hour(h), report.ReasonDelivery, some)
		b.StartTimer()
		if _, err := f.update(hour(h+1).Start, ""); err != nil {
			b.Fatal(err)
		}
		h++
	}
}

// BenchmarkFirstDelivery is a month's first delivery: one hour with
// transactions of 500 agencies, so the first draft renders 500 PDFs (the
// real renderer) and CSVs. Each op is a new month in a new sink. Besides
// ns/op it reports the process's CPU time per op (cpu-s/op, the garbage
// collector's included), which the other processes on a shared machine
// disturb less.
func BenchmarkFirstDelivery(b *testing.B) {
	all := map[string]int64{}
	for i := range 500 {
		all[fmt.Sprintf("agency-%03d", i)] = int64(100 + i)
	}
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		t := &testing.T{}
		f := newFixture(t)
		f.t = t
		f.c.Formats = monthclose.Formats{PDF: true, CSV: true}
		f.c.RenderPDF = pdf.Render
		f.publish(hour(0), report.ReasonDelivery, all)
		start := testenv.ProcessCPU()
		b.StartTimer()
		res, err := f.update(hour(1).Start, "")
		b.StopTimer()
		cpu += testenv.ProcessCPU() - start
		if err != nil || len(res.Months) != 1 || res.Months[0].Agencies != 500 {
			b.Fatalf("first delivery: %v %+v", err, res)
		}
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

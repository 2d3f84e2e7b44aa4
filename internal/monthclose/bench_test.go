package monthclose_test

import (
	"fmt"
	"testing"

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

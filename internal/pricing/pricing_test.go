package pricing

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestOf: dated rates split transactions by recorded_at (a rate applies
// from its From on, inclusive); an agency's schedule beats the default
// from its first rate on, the default applies before it; an item's own
// commission_bps wins over both.
func TestOf(t *testing.T) {
	table := Table{
		Default: Schedule{{BPS: 1000}, {BPS: 900, From: day("2026-12-01")}},
		Agencies: map[string]Schedule{
			"acme": {{BPS: 1200}, {BPS: 1100, From: day("2026-12-01")}},
			"late": {{BPS: 500, From: day("2027-01-01").Add(12 * time.Hour)}},
		},
	}
	tests := []struct {
		name       string
		agency     string
		recordedAt time.Time
		own        int32
		hasOwn     bool
		want       int32
	}{
		{"default before its date", "other", day("2026-11-30").Add(24*time.Hour - time.Millisecond), 0, false, 1000},
		{"default from its date", "other", day("2026-12-01"), 0, false, 900},
		{"agency before its date", "acme", day("2026-11-30"), 0, false, 1200},
		{"agency from its date", "acme", day("2026-12-01"), 0, false, 1100},
		{"agency long after", "acme", day("2030-01-01"), 0, false, 1100},
		{"default before an agency's first rate", "late", day("2027-01-01").Add(12*time.Hour - time.Millisecond), 0, false, 900},
		{"agency's first dated rate", "late", day("2027-01-01").Add(12 * time.Hour), 0, false, 500},
		{"own rate wins", "acme", day("2026-12-01"), 1, true, 1},
		{"own rate 0 wins", "other", day("2026-01-01"), 0, true, 0},
	}
	for _, tt := range tests {
		tx := item.Transaction{AgencyID: tt.agency, RecordedAt: tt.recordedAt, BPS: tt.own, HasBPS: tt.hasOwn}
		if got := table.Of(&tx); got != tt.want {
			t.Errorf("%s: Of = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestForPeriod: a first billing, a revision that billed nothing and a
// re-pricing use today's table; a revision with line items keeps each
// billed transaction's rate and gives new ones today's table; one without
// uses the table its manifest records for all, or today's when it records
// none. The Pricer's Table is what the new manifest records.
func TestForPeriod(t *testing.T) {
	recorded, current := Flat(1000), Flat(900)
	billed := func() *Billed {
		b := NewBilled(t.TempDir(), 0)
		t.Cleanup(func() { b.Close() })
		if err := b.Add([]byte("tx-billed"), 1000); err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name        string
		rev         *Revision
		reprice     bool
		table       Table
		billed, new int32 // the rates of tx-billed and tx-new
	}{
		{"first billing", nil, false, current, 900, 900},
		{"line items: billed keep their rate, new get today's", &Revision{Table: &recorded, Billed: billed(), Transactions: 1}, false, current, 1000, 900},
		{"line items, no recorded table", &Revision{Billed: billed(), Transactions: 1}, false, current, 1000, 900},
		{"no line items: the recorded table", &Revision{Table: &recorded, Transactions: 1}, false, recorded, 1000, 1000},
		{"no line items, no recorded table", &Revision{Transactions: 1}, false, current, 900, 900},
		{"billed nothing", &Revision{Table: &recorded}, false, current, 900, 900},
		{"reprice", &Revision{Table: &recorded, Billed: billed(), Transactions: 1}, true, current, 900, 900},
	} {
		p := ForPeriod(tt.rev, current, tt.reprice)
		if got := p.Table(); !got.Equal(tt.table) {
			t.Errorf("%s: table %+v, want %+v", tt.name, got, tt.table)
		}
		for _, c := range []struct {
			id   string
			want int32
		}{{"tx-billed", tt.billed}, {"tx-new", tt.new}} {
			if got, err := p.Of(&item.Transaction{ID: c.id, AgencyID: "a"}); err != nil || got != c.want {
				t.Errorf("%s: %s at %d (%v), want %d", tt.name, c.id, got, err, c.want)
			}
		}
		if err := p.Finish(); err != nil {
			t.Errorf("%s: Finish: %v", tt.name, err)
		}
	}
	if Flat(1).Equal(Table{Default: Schedule{{BPS: 1}}, Agencies: map[string]Schedule{"a": {{BPS: 1}}}}) {
		t.Error("Equal ignores agencies")
	}
}

// TestPricerBilled: billed rates added in any order, more than the sort's
// memory holds, merge with transactions asked in ascending id order,
// billed and new ids interleaved; an item's own rate wins over its billed
// one; ids asked out of order are ErrOrder, never a price.
func TestPricerBilled(t *testing.T) {
	const n = 5000
	b := NewBilled(t.TempDir(), 16<<10)
	defer b.Close()
	for i := n - 1; i >= 0; i -= 2 { // odd ids billed, descending
		if err := b.Add(fmt.Appendf(nil, "tx-%05d", i), int32(i%7000)); err != nil {
			t.Fatal(err)
		}
	}
	p := ForPeriod(&Revision{Billed: b, Transactions: b.Len()}, Flat(9999), false)
	for i := range n {
		tx := item.Transaction{ID: fmt.Sprintf("tx-%05d", i), AgencyID: "a"}
		want := int32(9999)
		switch {
		case i == 1:
			tx.BPS, tx.HasBPS, want = 3, true, 3
		case i%2 == 1:
			want = int32(i % 7000)
		}
		got, err := p.Of(&tx)
		if err != nil || got != want {
			t.Fatalf("%s at %d (%v), want %d", tx.ID, got, err, want)
		}
		if i == 10 { // the same id again is fine
			if got, err := p.Of(&tx); err != nil || got != want {
				t.Fatalf("%s again at %d (%v), want %d", tx.ID, got, err, want)
			}
		}
	}
	if _, err := p.Of(&item.Transaction{ID: "tx-00003", AgencyID: "a"}); !errors.Is(err, ErrOrder) {
		t.Errorf("out of order: %v, want ErrOrder", err)
	}
	if err := p.Finish(); err != nil {
		t.Errorf("Finish: %v", err)
	}
}

// BenchmarkBilled adds 1,000,000 billed rates in reverse order (the
// default 32 MiB budget: they spill), then prices 1,000,000 transactions
// in id order, half of them billed; reports transactions/s and the live
// heap the Billed holds after the merge (beyond the benchmark's own ids).
func BenchmarkBilled(b *testing.B) {
	const n = 1_000_000
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("tx-%08d-0123456789", i)
	}
	var base, ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	b.ReportAllocs()
	for b.Loop() {
		bl := NewBilled(b.TempDir(), 0)
		for i := n - 1; i >= 0; i -= 2 {
			if err := bl.Add([]byte(ids[i]), 1000); err != nil {
				b.Fatal(err)
			}
		}
		p := ForPeriod(&Revision{Billed: bl, Transactions: bl.Len()}, Flat(900), false)
		tx := item.Transaction{AgencyID: "a"}
		for i := range n {
			tx.ID = ids[i]
			if _, err := p.Of(&tx); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Finish(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		p.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	b.ReportMetric((float64(ms.HeapAlloc)-float64(base.HeapAlloc))/(1<<20), "heapMB")
}

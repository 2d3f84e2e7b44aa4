package aggregate

import (
	"fmt"
	"testing"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/pricing"
)

// BenchmarkAdd sums transactions of 500 agencies, in the id order collect
// emits them (so each one's agency is unrelated to the previous one's),
// summary only (no line items).
func BenchmarkAdd(b *testing.B) {
	usd, eur := mustCurrency("USD"), mustCurrency("EUR")
	txs := make([]item.Transaction, 10_000)
	for i := range txs {
		c := usd
		if i%10 == 0 {
			c = eur
		}
		txs[i] = newTx(b, fmt.Sprintf("agency-%04d", (i*7919)%500), c, item.Purchase, "19.99")
		txs[i].ID = fmt.Sprintf("tx-%06d", i)
	}
	a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer()})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := a.Add(&txs[i%len(txs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkLineItems adds 200,000 transactions of 500 agencies with line
// items kept, in id order, then reads the line items back in file order:
// the line-item sort of a big period (a 4 MiB budget, so most of it spills
// as a 5M-transaction period's does). It reports the bytes spilled per
// line item.
func BenchmarkLineItems(b *testing.B) {
	const n = 200_000
	usd := mustCurrency("USD")
	txs := make([]item.Transaction, n)
	for i := range txs {
		txs[i] = newTx(b, fmt.Sprintf("agency-%04d", (i*7919)%500), usd, item.Purchase, "19.99")
		txs[i].ID = fmt.Sprintf("tx-1-%06d", i)
		txs[i].PK = fmt.Sprintf("j#202601010000#%d", i%8)
		txs[i].SK = fmt.Sprintf("2026-01-01T00:%02d:%02d.%06dZ#tx-1-%06d", i/3600%60, i/60%60, i, i)
		txs[i].CustomerID = fmt.Sprintf("cust-%05d", i%20_000)
		txs[i].ProductID = fmt.Sprintf("prod-%03d", i%200)
	}
	b.ReportAllocs()
	var spilled int64
	for b.Loop() {
		a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer(), LineItems: true, Dir: b.TempDir(), SortMemBytes: 4 << 20})
		for i := range txs {
			if err := a.Add(&txs[i]); err != nil {
				b.Fatal(err)
			}
		}
		lines, err := a.Lines()
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for lines.Next() {
			got++
		}
		if err := lines.Err(); err != nil || got != n {
			b.Fatalf("%d line items, %v", got, err)
		}
		lines.Close()
		spilled = a.lines.Stats().SpilledBytes
		a.Close()
	}
	b.ReportMetric(float64(spilled)/n, "spilled-B/line")
}

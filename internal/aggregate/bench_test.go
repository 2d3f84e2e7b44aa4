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

package collect

import (
	"testing"

	"github.com/reportjob/reportjob/internal/item"
)

func fpItem(pk, sk string, attrs map[string]item.Value) item.Item {
	return item.Item{PK: pk, SK: sk, Attrs: attrs}
}

func TestFingerprint(t *testing.T) {
	base := func() []item.Item {
		return []item.Item{
			fpItem("202403010000", "a", map[string]item.Value{item.AttrTransactionID: item.S("t1"), item.AttrAmount: item.N("1.00")}),
			fpItem("202403010000", "b", map[string]item.Value{item.AttrTransactionID: item.S("t2"), item.AttrAmount: item.N("2.00")}),
			fpItem("202403010015", "a", map[string]item.Value{item.AttrTransactionID: item.S("t3")}),
		}
	}
	of := func(items []item.Item) string {
		var f Fingerprint
		var buf []byte
		for i := range items {
			buf = f.Add(&items[i], buf)
		}
		return f.String()
	}
	if got := (Fingerprint{}).String(); got != "0000000000000000000000000000000000000000000000000000000000000000" {
		t.Errorf("empty = %s", got)
	}
	want := of(base())
	// Order does not matter, and merging partial sums is the same.
	items := base()
	items[0], items[2] = items[2], items[0]
	if got := of(items); got != want {
		t.Errorf("reordered: %s, want %s", got, want)
	}
	var a, b Fingerprint
	var buf []byte
	items = base()
	buf = a.Add(&items[0], buf)
	buf = b.Add(&items[1], buf)
	b.Add(&items[2], buf)
	a.Merge(b)
	if a.String() != want {
		t.Errorf("merged: %s, want %s", a.String(), want)
	}
	// Every change is seen; an attribute outside the contract is not.
	changes := map[string]func(items []item.Item){
		"amount text":    func(it []item.Item) { it[0].Attrs[item.AttrAmount] = item.N("1.0") },
		"type":           func(it []item.Item) { it[0].Attrs[item.AttrAmount] = item.S("1.00") },
		"sort key":       func(it []item.Item) { it[1].SK = "c" },
		"partition key":  func(it []item.Item) { it[2].PK = "202403010030" },
		"added attr":     func(it []item.Item) { it[2].Attrs[item.AttrKind] = item.S("refund") },
		"removed attr":   func(it []item.Item) { delete(it[1].Attrs, item.AttrAmount) },
		"text boundary":  func(it []item.Item) { it[0].PK, it[0].SK = "202403010000a", "" },
		"swapped values": func(it []item.Item) { it[0].Attrs, it[1].Attrs = it[1].Attrs, it[0].Attrs },
	}
	for name, change := range changes {
		items := base()
		change(items)
		if got := of(items); got == want {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	items = base()
	items[0].Attrs["status"] = item.S("shipped")
	if got := of(items); got != want {
		t.Errorf("non-contract attribute changed the fingerprint")
	}
	if got := of(base()[:2]); got == want {
		t.Error("an item removed: fingerprint unchanged")
	}
}

// benchItem is an item of the benchmark's shape (every contract attribute
// present), and its transaction.
func benchItem(b *testing.B) (item.Item, item.Transaction) {
	it := fpItem("202601010000", "2026-01-01T00:00:22.7QJ3BKwXKXwJHmGa", map[string]item.Value{
		item.AttrTransactionID: item.S("tx-1-6385"), item.AttrAgencyID: item.S("agency-0031"),
		item.AttrAmount: item.N("100.125"), item.AttrCurrency: item.S("BHD"), item.AttrKind: item.S("purchase"),
		item.AttrCommissionBPS: item.N("1000"), item.AttrCustomerID: item.S("cust-151198"),
		item.AttrProductID: item.S("prod-4811"), item.AttrRecordedAt: item.S("2026-01-01T00:00:22.983Z"),
	})
	tx, err := item.Parse(it)
	if err != nil {
		b.Fatal(err)
	}
	return it, tx
}

// BenchmarkFingerprintAdd is what Read hashes for one item (benchItem): in
// version 1, the period fingerprint's hash and the content fingerprint
// (the sort key's); in version 2 (BenchmarkFingerprintAddV2) the content
// fingerprint and a hash of it with the keys.
func BenchmarkFingerprintAdd(b *testing.B) {
	it, tx := benchItem(b)
	vals, present := it.Contract()
	var f Fingerprint
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = f.addContract(it.PK, it.SK, &vals, present, buf)
		_ = tx.Fingerprint()
	}
}

// BenchmarkFingerprintAddV2 is BenchmarkFingerprintAdd in version 2.
func BenchmarkFingerprintAddV2(b *testing.B) {
	_, tx := benchItem(b)
	var f Fingerprint
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		fp := tx.Fingerprint()
		buf = f.addTransaction(&tx, &fp, buf)
	}
}

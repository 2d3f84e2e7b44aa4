package collect

import (
	"context"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// TestFingerprintGolden pins the fingerprints to the values the first
// release computed: manifests (items_fingerprint) and dedupe claims (the
// content fingerprint) store them, so a faster implementation must give
// the same bytes, or every delivered period would look changed at its
// recheck. Covered: an attribute outside the contract (ignored), wrong
// types, a zero type byte, absent attributes, a nil map.
func TestFingerprintGolden(t *testing.T) {
	items := []item.Item{
		{PK: "202601010000", SK: "2026-01-01T00:00:12.7ZkKN6dce92mgcDD", Attrs: map[string]item.Value{
			item.AttrTransactionID: item.S("tx-1"), item.AttrAgencyID: item.S("Agence Étoile"), item.AttrAmount: item.N("19.99"),
			item.AttrCurrency: item.S("USD"), item.AttrKind: item.S("refund"), item.AttrCommissionBPS: item.N("1250"),
			item.AttrCustomerID: item.S("c-1"), item.AttrProductID: item.S("p-1"), item.AttrRecordedAt: item.S("2026-01-01T00:00:12.345Z"),
			"extra": item.S("ignored")}},
		{PK: "202601010015#3", SK: "2026-01-01T00:15:00.x", Attrs: map[string]item.Value{
			item.AttrTransactionID: item.S("tx-2"), item.AttrAmount: item.S("1.5e1"), item.AttrCurrency: item.N("7"),
			item.AttrKind: {Type: item.Other, Text: "BOOL true"}, item.AttrRecordedAt: {Type: 0, Text: "zero type"}}},
		{PK: "p", SK: "s", Attrs: nil},
	}
	want := []string{
		"267e7feec35614e2efa859952a7fec1bc35e543a507717d335f3f160f38e0577",
		"d91e1e42b3b921ad5f905d052c1255686c7eb041498d885e0036d452522ec4f0",
		"1842618465bef60295935a37d32922b890a502b17afb2876cc95e49dca9f301f",
	}
	var all Fingerprint
	var buf []byte
	for i := range items {
		var one Fingerprint
		buf = one.Add(&items[i], buf)
		if got := one.String(); got != want[i] {
			t.Errorf("item %d: fingerprint %s, want %s", i, got, want[i])
		}
		all.Merge(one)
	}
	if got, w := all.String(), "17deffb5dcce2c92e4cc10d229bb643cc082072d14ffc8a802c0aa51105bfa86"; got != w {
		t.Errorf("sum: %s, want %s", got, w)
	}

	for _, c := range []struct {
		tx   item.Transaction
		want string
	}{
		{item.Transaction{ID: "tx-é", AgencyID: "../x", CustomerID: "c", Kind: item.Refund,
			Currency: money.Currency{Code: "BHD", Digits: 3}, Amount: 1<<62 + 5, BPS: 10000, HasBPS: true, RecordedAt: time.Unix(0, 0)},
			"7e2372ed4bf73c4afe781a48950543b07e541d42ffe12ff968b454901116ac8f"},
		{item.Transaction{ID: "t", AgencyID: "a"}, "094839c324ad414af98dd41bd08f401b6231423ee45b09a617d80dc8056ea9ea"},
	} {
		fp := c.tx.Fingerprint()
		if got := hexString(fp[:]); got != c.want {
			t.Errorf("Transaction.Fingerprint of %q: %s, want %s", c.tx.ID, got, c.want)
		}
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// TestFingerprintV2Golden pins version 2 (report.ItemsFingerprint2), which
// manifests record since: valid items by their keys, recorded time and
// content fingerprint, an invalid one as in version 1. Two items that
// differ only in how an amount is written are the same item; a new key,
// recorded time or amount is not. The value was also computed apart, from
// the formula in addTransaction's comment (Python's hashlib).
func TestFingerprintV2Golden(t *testing.T) {
	valid := func(amount, recorded, sk string) item.Item {
		return item.Item{PK: "202601010000", SK: sk, Attrs: map[string]item.Value{
			item.AttrTransactionID: item.S("tx-1"), item.AttrAgencyID: item.S("Agence Étoile"), item.AttrAmount: item.N(amount),
			item.AttrCurrency: item.S("USD"), item.AttrKind: item.S("refund"), item.AttrCommissionBPS: item.N("1250"),
			item.AttrCustomerID: item.S("c-1"), item.AttrProductID: item.S("p-1"), item.AttrRecordedAt: item.S(recorded)}}
	}
	const sk = "2026-01-01T00:00:12.7ZkKN6dce92mgcDD"
	invalid := item.Item{PK: "202601010000", SK: "s", Attrs: map[string]item.Value{item.AttrTransactionID: item.S("tx-2"), item.AttrAmount: item.S("1.5e1")}}
	for _, c := range []struct {
		name string
		it   item.Item
		want string
	}{
		{"valid", valid("19.99", "2026-01-01T00:00:12.345Z", sk), "ca67f3278f71c422f0c13e09c759eda57bcd3c93ef0be8af81d1ac18f85e1781"},
		{"amount written otherwise", valid("19.990", "2026-01-01T00:00:12.345Z", sk), "ca67f3278f71c422f0c13e09c759eda57bcd3c93ef0be8af81d1ac18f85e1781"},
		{"recorded_at written otherwise", valid("19.99", "2026-01-01T01:00:12.345+01:00", sk), "ca67f3278f71c422f0c13e09c759eda57bcd3c93ef0be8af81d1ac18f85e1781"},
		{"another amount", valid("19.98", "2026-01-01T00:00:12.345Z", sk), ""},
		{"another recorded time", valid("19.99", "2026-01-01T00:00:12.346Z", sk), ""},
		{"another sort key", valid("19.99", "2026-01-01T00:00:12.345Z", "2026-01-01T00:00:12.8ZkKN6dce92mgcDD"), ""},
		// Hashed as in version 1.
		{"invalid", invalid, "v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := fingerprintV2(t, c.it)
			switch c.want {
			case "":
				if base := fingerprintV2(t, valid("19.99", "2026-01-01T00:00:12.345Z", sk)); got == base {
					t.Errorf("fingerprint %s, the same as the first item's", got)
				}
			case "v1":
				var v1 Fingerprint
				v1.Add(&c.it, nil)
				if got != v1.String() {
					t.Errorf("fingerprint %s, want version 1's %s", got, v1.String())
				}
			default:
				if got != c.want {
					t.Errorf("fingerprint %s, want %s", got, c.want)
				}
			}
		})
	}
}

// fingerprintV2 is the version 2 fingerprint of it alone, as Read computes
// it.
func fingerprintV2(t *testing.T, it item.Item) string {
	t.Helper()
	src := oneItem{it}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := report.Period{Start: start, End: start.Add(15 * time.Minute)}
	c, err := Read(context.Background(), Config{Dir: t.TempDir(), Fingerprint: report.ItemsFingerprint2}, src, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Fingerprint.String()
}

// oneItem is a Source of one item.
type oneItem struct{ it item.Item }

func (o oneItem) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	if pk != o.it.PK {
		return nil
	}
	return fn([]item.Item{o.it})
}

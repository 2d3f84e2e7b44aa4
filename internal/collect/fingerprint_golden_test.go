package collect

import (
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
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

package item

import "testing"

// benchItem is a typical stored item: every attribute of the contract.
func benchItem() Item {
	return Item{PK: "202601010000", SK: "2026-01-01T00:00:12.7ZkKN6dce92mgcDD", Attrs: map[string]Value{
		AttrTransactionID: S("tx-1-123456"),
		AttrAgencyID:      S("agency-0042"),
		AttrAmount:        N("19.99"),
		AttrCurrency:      S("USD"),
		AttrKind:          S("purchase"),
		AttrCommissionBPS: N("1250"),
		AttrCustomerID:    S("cust-012345"),
		AttrProductID:     S("prod-0678"),
		AttrRecordedAt:    S("2026-01-01T00:00:12.345Z"),
	}}
}

// BenchmarkParse validates one typical item.
func BenchmarkParse(b *testing.B) {
	it := benchItem()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(it); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprint computes one transaction's content fingerprint.
func BenchmarkFingerprint(b *testing.B) {
	tx, err := Parse(benchItem())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = tx.Fingerprint()
	}
}

// BenchmarkBinaryRoundTrip encodes and decodes one transaction, as the
// external sorts do.
func BenchmarkBinaryRoundTrip(b *testing.B) {
	tx, err := Parse(benchItem())
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	var got Transaction
	b.ReportAllocs()
	for b.Loop() {
		buf = tx.AppendBinary(buf[:0])
		if err := got.DecodeBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}

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

// BenchmarkBinary encodes and decodes a typical transaction as a spill
// record: whole (AppendBinary, the encoding sort records used before) and
// without its keys and id (AppendBinaryBody, given back apart), with the
// record's bytes.
func BenchmarkBinary(b *testing.B) {
	tx, err := Parse(benchItem())
	if err != nil {
		b.Fatal(err)
	}
	pk, sk, id := []byte(tx.PK), []byte(tx.SK), []byte(tx.ID)
	b.Run("whole", func(b *testing.B) {
		var buf []byte
		var got Transaction
		b.ReportAllocs()
		for b.Loop() {
			buf = tx.AppendBinary(buf[:0])
			if err := got.DecodeBinary(buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "B/record")
	})
	b.Run("body", func(b *testing.B) {
		var buf []byte
		var got Transaction
		b.ReportAllocs()
		for b.Loop() {
			buf = tx.AppendBinaryBody(buf[:0])
			if err := got.DecodeBinaryBody(pk, sk, id, buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "B/record")
	})
}

// BenchmarkParseContract validates one typical item's contract values
// (what collect does, after one walk of the item for the fingerprint too).
func BenchmarkParseContract(b *testing.B) {
	it := benchItem()
	vals, present := it.Contract()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseContract(it.PK, it.SK, &vals, present); err != nil {
			b.Fatal(err)
		}
	}
}

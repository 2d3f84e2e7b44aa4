package report

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
)

// TestSpillRecordRoundTrip: a transaction spilled to disk comes back the
// same, for any time RFC 3339 allows (UnixNano would wrap outside
// 1678..2262 and change the bytes of a spilled build).
func TestSpillRecordRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	var want []item.Transaction
	for _, at := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 2, 29, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2024, 3, 1, 12, 0, 0, 123_000_000, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	} {
		tx := item.Transaction{
			PK: "202403011200#3", SK: "2024-03-01T12:00:00.abc", ID: "tx-é", AgencyID: "../x", CustomerID: "",
			ProductID: "p", Kind: item.Refund, Currency: money.Currency{Code: "BHD", Digits: 3},
			Amount: 1<<62 + 5, BPS: 10000, HasBPS: true, RecordedAt: at,
		}
		want = append(want, tx)
		buf.Write(encodeTx(nil, &tx))
	}
	r := bufio.NewReader(&buf)
	for i, w := range want {
		var got item.Transaction
		if err := decodeTx(r, &got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got != w {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
}

package item

import (
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// TestDecodeBinaryCopies: the decoded strings are copies (the sorters reuse
// their buffers), and a failed decode leaves the zero transaction.
func TestDecodeBinaryCopies(t *testing.T) {
	tx := Transaction{PK: "202403011200", SK: "2024-03-01T12:00:00.abc", ID: "tx-1", AgencyID: "ag", CustomerID: "c",
		ProductID: "p", Kind: Purchase, Currency: money.Currency{Code: "USD", Digits: 2}, Amount: 1999,
		RecordedAt: time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)}
	b := tx.AppendBinary(nil)
	var got Transaction
	if err := got.DecodeBinary(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'X'
	}
	if got != tx {
		t.Fatalf("decoded transaction changed with its buffer:\n got %+v\nwant %+v", got, tx)
	}
	if err := got.DecodeBinary(b[:5]); err == nil || got != (Transaction{}) {
		t.Fatalf("truncated record: err %v, transaction %+v", err, got)
	}
}

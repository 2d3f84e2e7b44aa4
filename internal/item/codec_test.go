package item

import (
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// TestBinaryRoundTrip: a transaction spilled to disk comes back the same,
// for any time RFC 3339 allows.
func TestBinaryRoundTrip(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 2, 29, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2024, 3, 1, 12, 0, 0, 123_000_000, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	} {
		tx := Transaction{
			PK: "202403011200#3", SK: "2024-03-01T12:00:00.abc", ID: "tx-é", AgencyID: "../x", CustomerID: "",
			ProductID: "p", Kind: Refund, Currency: money.Currency{Code: "BHD", Digits: 3},
			Amount: 1<<62 + 5, BPS: 10000, HasBPS: true, RecordedAt: at,
		}
		b := tx.AppendBinary([]byte("prefix"))
		var got Transaction
		if err := got.DecodeBinary(b[len("prefix"):]); err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		if got != tx {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, tx)
		}
		for n := 0; n < len(b)-len("prefix"); n++ {
			if err := got.DecodeBinary(b[len("prefix") : len("prefix")+n]); !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("truncated to %d bytes: err %v, want ErrCorruptRecord", n, err)
			}
		}
		// The body alone, with the keys and id given apart.
		body := tx.AppendBinaryBody(nil)
		var gotBody Transaction
		if err := gotBody.DecodeBinaryBody([]byte(tx.PK), []byte(tx.SK), []byte(tx.ID), body); err != nil {
			t.Fatalf("%s: body: %v", at, err)
		}
		if gotBody != tx {
			t.Errorf("body round trip:\n got %+v\nwant %+v", gotBody, tx)
		}
		for n := range len(body) {
			if err := gotBody.DecodeBinaryBody(nil, nil, nil, body[:n]); !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("body truncated to %d bytes: err %v, want ErrCorruptRecord", n, err)
			}
		}
	}
}

// TestRecordRoundTrip: a Record gives back its item, contract attributes
// and others, and validates as the item does.
func TestRecordRoundTrip(t *testing.T) {
	for _, it := range []Item{
		{PK: "p", SK: "s", Attrs: map[string]Value{AttrTransactionID: S("t"), AttrAmount: N("1")}},
		{PK: "p", SK: "s", Attrs: map[string]Value{AttrTransactionID: S("t"), "extra": S("x"), "n": N("2")}},
		{PK: "p", SK: "s", Attrs: map[string]Value{}},
	} {
		r := RecordOf(&it)
		if got := r.Item(); !reflect.DeepEqual(got, it) {
			t.Errorf("RecordOf(%v).Item() = %v", it, got)
		}
		if (r.Others == nil) != (len(it.Attrs) == bits.OnesCount16(r.Present)) {
			t.Errorf("%v: Others %v", it, r.Others)
		}
		_, err1 := Parse(it)
		_, err2 := r.Parse()
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Errorf("%v: Parse %v, Record.Parse %v", it, err1, err2)
		}
	}
}

package item

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
)

// fuzzAttrs are the attributes FuzzParse sets, in the order Parse checks
// them; bit i of present and bits 2i..2i+1 of types belong to fuzzAttrs[i].
var fuzzAttrs = []string{
	AttrTransactionID, AttrAgencyID, AttrCurrency, AttrAmount, AttrKind,
	AttrCommissionBPS, AttrCustomerID, AttrProductID, AttrRecordedAt,
}

// fuzzTypes maps two bits to a stored type: S, N, another DynamoDB type,
// or a type byte no backend writes (a damaged embedded file).
var fuzzTypes = [4]Type{String, Number, Other, 0}

// contractType is the type each attribute must have.
var contractType = map[string]Type{
	AttrTransactionID: String, AttrAgencyID: String, AttrCurrency: String, AttrAmount: Number,
	AttrKind: String, AttrCommissionBPS: Number, AttrCustomerID: String, AttrProductID: String, AttrRecordedAt: String,
}

// typesOK is the type mask (2 bits per attribute) where every attribute
// has its contract type.
const typesOK = 0b00_00_00_01_00_01_00_00_00

// FuzzParse: whatever a producer stores, Parse returns a transaction that
// meets the contract and survives every round trip the job puts it
// through (canonical item, spill record, fingerprint), or a *RejectError
// naming a field of the item and a reason. Never a panic, never a billed
// item that breaks a rule.
func FuzzParse(f *testing.F) {
	const all = 0x1ff
	seeds := []struct {
		present, types                                 uint32
		sk, id, agency, cur, amount, kind, bps, cu, pr string
		at                                             string
	}{
		{0b1111, typesOK, testSK, "txn-1", "acme", "USD", "19.99", "", "", "", "", ""},
		{all, typesOK, testSK, "txn-2", "Agence Étoile", "BHD", "1.500", "refund", "250", "c", "p", "2016-10-23T03:31:02.123456+02:00"},
		{0b1111, typesOK, testSK, "t", "a", "USD", "NaN", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "USD", "Infinity", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "USD", "1e400", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "USD", "1234567890123456789012345678901234567890", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "USD", "19.999", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "USD", "-0.00", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "usd", "1", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a", "XXX", "1", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a\x00b", "USD", "1", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t\xff", "a", "USD", "1", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", "a\u200bb", "USD", "1", "", "", "", "", ""},
		{0b1111, typesOK, testSK, "t", strings.Repeat("日", 27), "USD", "1", "", "", "", "", ""},
		{0b1111, 0b10_10_10_10, testSK, "BOOL", "M", "L", "NULL", "", "", "", "", ""},
		{0b1111, 0b00_11_00_00, testSK, "t", "a", "USD", "1", "", "", "", "", ""},
		{0b1_0000_1111, typesOK, testSK, "t", "a", "JPY", "1E3", "", "", "", "", "9999-12-31T23:59:59-01:00"},
		{0b1_0000_1111, typesOK, testSK, "t", "a", "JPY", "1E3", "", "", "", "", "0000-01-01T00:00:00+01:00"},
		{0b1111, typesOK, "2016-10-23T01:30:00.0OIl", "t", "a", "CLF", "99999999999999.9999", "", "", "", "", ""},
		{0b10_0000_1111, typesOK, testSK, "t", "a", "USD", "1", "", "12.5", "", "", ""},
		{0b10_0000_1111, typesOK, testSK, "t", "a", "USD", "1", "", "1E4", "", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.present, s.types, s.sk, s.id, s.agency, s.cur, s.amount, s.kind, s.bps, s.cu, s.pr, s.at)
	}
	f.Fuzz(func(t *testing.T, present, types uint32, sk, id, agency, cur, amount, kind, bps, cu, pr, at string) {
		texts := []string{id, agency, cur, amount, kind, bps, cu, pr, at}
		it := Item{PK: testPK, SK: sk, Attrs: map[string]Value{}}
		for i, name := range fuzzAttrs {
			if present&(1<<i) != 0 {
				it.Attrs[name] = Value{Type: fuzzTypes[(types>>(2*i))&3], Text: texts[i]}
			}
		}
		tx, err := Parse(it)
		if err != nil {
			checkReject(t, it, err)
			return
		}
		checkContract(t, it, tx)
		checkRoundTrips(t, tx)
	})
}

// checkReject: a refusal is a *RejectError about a field the item has (or
// lacks), quoting at most 64 bytes of its value.
func checkReject(t *testing.T, it Item, err error) {
	t.Helper()
	var re *RejectError
	if !errors.As(err, &re) {
		t.Fatalf("Parse error %v (%T) is not a *RejectError", err, err)
	}
	if re.Reason == "" {
		t.Fatalf("reject without a reason: %+v", re)
	}
	if len(re.Value) > maxRejectValue+len("...") {
		t.Fatalf("reject value of %d bytes: %q", len(re.Value), re.Value)
	}
	text := it.SK
	if re.Field != FieldSortKey {
		v, ok := it.Attrs[re.Field]
		if _, known := contractType[re.Field]; !known {
			t.Fatalf("reject names field %q, not an attribute of the contract", re.Field)
		}
		if !ok && re.Reason != "missing" {
			t.Fatalf("reject of absent %s says %q, want missing", re.Field, re.Reason)
		}
		if ok && re.Reason == "missing" {
			t.Fatalf("reject says %s missing; the item has it", re.Field)
		}
		text = v.Text
	}
	if !strings.HasPrefix(text, strings.TrimSuffix(re.Value, "...")) {
		t.Fatalf("reject value %q is not the start of the field's value %q", re.Value, text)
	}
	if re.Error() == "" || !strings.Contains(re.Error(), re.Reason) {
		t.Fatalf("Error() = %q", re.Error())
	}
}

// checkContract: a parsed transaction meets every rule of the producer
// contract, independently of how Parse checks it.
func checkContract(t *testing.T, it Item, tx Transaction) {
	t.Helper()
	for name, v := range it.Attrs {
		if v.Type != contractType[name] {
			t.Fatalf("billed although %s has type %v", name, v.Type)
		}
	}
	if tx.PK != it.PK || tx.SK != it.SK || tx.ID != it.Attrs[AttrTransactionID].Text || tx.AgencyID != it.Attrs[AttrAgencyID].Text {
		t.Fatalf("keys or ids changed: %+v from %+v", tx, it)
	}
	for _, s := range []string{tx.ID, tx.AgencyID, tx.CustomerID, tx.ProductID} {
		if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
			t.Fatalf("billed text %q: invalid UTF-8 or a control character", s)
		}
	}
	if n := utf8.RuneCountInString(tx.ID); n < 1 || n > maxTransactionID {
		t.Fatalf("transaction_id of %d characters", n)
	}
	if n := utf8.RuneCountInString(tx.AgencyID); n < 1 || n > maxAgencyID || strings.ContainsFunc(tx.AgencyID, notPrintable) {
		t.Fatalf("agency_id %q billed", tx.AgencyID)
	}
	if n := len(keys.EscapeAgency(tx.AgencyID)); n > keys.MaxEscapedAgency {
		t.Fatalf("agency_id %q escapes to %d bytes", tx.AgencyID, n)
	}
	c, err := money.LookupCurrency(it.Attrs[AttrCurrency].Text)
	if err != nil || c != tx.Currency {
		t.Fatalf("currency %+v billed from %q (%v)", tx.Currency, it.Attrs[AttrCurrency].Text, err)
	}
	if v, err := money.ParseAmount(it.Attrs[AttrAmount].Text, c); err != nil || v != tx.Amount || v <= 0 {
		t.Fatalf("amount %d billed from %q (%d, %v)", tx.Amount, it.Attrs[AttrAmount].Text, v, err)
	}
	if _, err := c.Scale4(tx.Amount); err != nil {
		t.Fatalf("amount %d does not fit DECIMAL(18,4): %v", tx.Amount, err)
	}
	if tx.Kind != Purchase && tx.Kind != Refund {
		t.Fatalf("kind %q", tx.Kind)
	}
	_, hasBPS := it.Attrs[AttrCommissionBPS]
	if tx.HasBPS != hasBPS || tx.BPS < 0 || tx.BPS > maxBPS || !hasBPS && tx.BPS != 0 {
		t.Fatalf("bps %d (has %v) from %+v", tx.BPS, tx.HasBPS, it.Attrs[AttrCommissionBPS])
	}
	if tx.RecordedAt.Location() != time.UTC || tx.RecordedAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Fatalf("recorded_at %v: not UTC milliseconds", tx.RecordedAt)
	}
	if y := tx.RecordedAt.Year(); y < 0 || y > 9999 {
		t.Fatalf("recorded_at %v: year %d has no RFC 3339 form", tx.RecordedAt, y)
	}
}

// checkRoundTrips: the canonical item parses back to tx, the spill record
// decodes back to tx, and the fingerprint ignores keys and time only.
func checkRoundTrips(t *testing.T, tx Transaction) {
	t.Helper()
	back, err := Parse(tx.Item())
	if err != nil || back != tx {
		t.Fatalf("Parse(Item()) = %+v, %v; want %+v", back, err, tx)
	}
	var dec Transaction
	if err := dec.DecodeBinary(tx.AppendBinary(nil)); err != nil || dec != tx {
		t.Fatalf("DecodeBinary(AppendBinary()) = %+v, %v; want %+v", dec, err, tx)
	}
	moved := tx
	moved.PK, moved.SK, moved.RecordedAt = "202401010000", "2024-01-01T00:00:00.1111111111111111", time.Unix(0, 0).UTC()
	if moved.Fingerprint() != tx.Fingerprint() {
		t.Fatal("the fingerprint depends on the keys or recorded_at")
	}
	moved.Amount++
	if moved.Fingerprint() == tx.Fingerprint() {
		t.Fatal("the fingerprint ignores the amount")
	}
}

// FuzzDecodeBinary: a damaged spill record is an error, never a panic,
// and whatever decodes re-encodes to a record that decodes the same.
func FuzzDecodeBinary(f *testing.F) {
	tx := Transaction{PK: testPK, SK: testSK, ID: "t", AgencyID: "a", Kind: Refund,
		Currency: money.Currency{Code: "USD", Digits: 2}, Amount: 1999, BPS: 250, HasBPS: true,
		RecordedAt: time.Date(2016, 10, 23, 1, 30, 0, 7e6, time.UTC)}
	rec := tx.AppendBinary(nil)
	f.Add(rec)
	f.Add(rec[:len(rec)-1])
	f.Add(append(rec, 0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Transaction
		if err := a.DecodeBinary(b); err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("DecodeBinary error %v does not wrap ErrCorruptRecord", err)
			}
			return
		}
		var again Transaction
		if err := again.DecodeBinary(a.AppendBinary(nil)); err != nil || again != a {
			t.Fatalf("re-encoded record decodes to %+v, %v; want %+v", again, err, a)
		}
	})
}

// TestParseRecordedAtYears is the regression test of a defect FuzzParse
// found: an offset pushed recorded_at out of years 0000..9999 once in UTC,
// Parse billed it, and Parse(tx.Item()) then failed (ingest --allow-late
// wrote such an item under keys no period reads). Now a reject.
func TestParseRecordedAtYears(t *testing.T) {
	for at, ok := range map[string]bool{
		"0000-01-01T00:00:00Z":      true,
		"0000-01-01T00:00:00-01:00": true,
		"0000-01-01T00:00:00+01:00": false,
		"9999-12-31T23:59:59.999Z":  true,
		"9999-12-31T23:59:59+01:00": true,
		"9999-12-31T23:59:59-01:00": false,
	} {
		tx, err := Parse(validItem(func(a map[string]Value) { a[AttrRecordedAt] = S(at) }))
		var re *RejectError
		switch {
		case ok && err != nil:
			t.Errorf("recorded_at %s: %v", at, err)
		case ok:
			if back, err := Parse(tx.Item()); err != nil || back != tx {
				t.Errorf("recorded_at %s: Parse(Item()) = %+v, %v", at, back, err)
			}
		case !errors.As(err, &re) || re.Field != AttrRecordedAt || !strings.Contains(re.Reason, "0000 to 9999"):
			t.Errorf("recorded_at %s: err %v, want a recorded_at reject naming the years", at, err)
		}
	}
}

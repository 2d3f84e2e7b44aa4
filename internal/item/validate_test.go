package item

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

const (
	testPK = "201610230130"
	testSK = "2016-10-23T01:30:00.7ZkKN6dce92mgcDD"
)

// validItem returns a valid item with the required attributes, changed by edit.
func validItem(edit func(a map[string]Value)) Item {
	a := map[string]Value{
		AttrTransactionID: S("txn-1"),
		AttrAgencyID:      S("agency-1"),
		AttrAmount:        N("19.99"),
		AttrCurrency:      S("USD"),
	}
	if edit != nil {
		edit(a)
	}
	return Item{PK: testPK, SK: testSK, Attrs: a}
}

func TestParseValid(t *testing.T) {
	usd := money.Currency{Code: "USD", Digits: 2}
	skTime := time.Date(2016, 10, 23, 1, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		edit func(a map[string]Value)
		sk   string // replaces the sort key when not ""
		want Transaction
	}{
		{"minimal", nil, "", Transaction{ID: "txn-1", AgencyID: "agency-1", Kind: Purchase, Currency: usd, Amount: 1999, RecordedAt: skTime}},
		{"full", func(a map[string]Value) {
			a[AttrKind] = S("refund")
			a[AttrCommissionBPS] = N("250")
			a[AttrCustomerID] = S("cust 7")
			a[AttrProductID] = S("prod/9")
			a[AttrRecordedAt] = S("2016-10-23T03:31:02.123456+02:00")
			a[AttrCurrency] = S("BHD")
			a[AttrAmount] = N("1.5")
			a["extra"] = Value{Type: Other, Text: "BOOL"}
		}, "", Transaction{ID: "txn-1", AgencyID: "agency-1", CustomerID: "cust 7", ProductID: "prod/9", Kind: Refund,
			Currency: money.Currency{Code: "BHD", Digits: 3}, Amount: 1500, BPS: 250, HasBPS: true,
			RecordedAt: time.Date(2016, 10, 23, 1, 31, 2, 123000000, time.UTC)}},
		{"purchase, exponent amount, bps 0", func(a map[string]Value) {
			a[AttrKind] = S("purchase")
			a[AttrAmount] = N("1.999E1")
			a[AttrCommissionBPS] = N("0")
		}, "", Transaction{ID: "txn-1", AgencyID: "agency-1", Kind: Purchase, Currency: usd, Amount: 1999, HasBPS: true, RecordedAt: skTime}},
		{"bps 10000 as 1E4, JPY", func(a map[string]Value) {
			a[AttrCommissionBPS] = N("1E4")
			a[AttrCurrency] = S("JPY")
			a[AttrAmount] = N("1500")
		}, "", Transaction{ID: "txn-1", AgencyID: "agency-1", Kind: Purchase, Currency: money.Currency{Code: "JPY", Digits: 0},
			Amount: 1500, BPS: 10000, HasBPS: true, RecordedAt: skTime}},
		{"unicode agency with spaces, longest escaped key", func(a map[string]Value) {
			// " Agência " escapes to 20 bytes, each 日 to 9: 20+9*24 = 236 <= 240.
			a[AttrAgencyID] = S(" Agência " + strings.Repeat("日", 24))
			a[AttrTransactionID] = S(strings.Repeat("é", 256))
		}, "", Transaction{ID: strings.Repeat("é", 256), AgencyID: " Agência " + strings.Repeat("日", 24), Kind: Purchase,
			Currency: usd, Amount: 1999, RecordedAt: skTime}},
		{"ASCII agency of 128 characters", func(a map[string]Value) {
			a[AttrAgencyID] = S(strings.Repeat("a", 128))
		}, "", Transaction{ID: "txn-1", AgencyID: strings.Repeat("a", 128), Kind: Purchase,
			Currency: usd, Amount: 1999, RecordedAt: skTime}},
		{"largest amount", func(a map[string]Value) { a[AttrAmount] = N("99999999999999.99") }, "",
			Transaction{ID: "txn-1", AgencyID: "agency-1", Kind: Purchase, Currency: usd, Amount: 9999999999999999, RecordedAt: skTime}},
		{"recorded_at wins over a bad sort key", func(a map[string]Value) {
			a[AttrRecordedAt] = S("2020-01-02T03:04:05Z")
		}, "not a sort key", Transaction{ID: "txn-1", AgencyID: "agency-1", Kind: Purchase, Currency: usd, Amount: 1999,
			RecordedAt: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)}},
	}
	for _, tt := range tests {
		it := validItem(tt.edit)
		if tt.sk != "" {
			it.SK = tt.sk
		}
		tt.want.PK, tt.want.SK = it.PK, it.SK
		got, err := Parse(it)
		if err != nil {
			t.Errorf("%s: Parse: %v", tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: Parse =\n%+v\nwant\n%+v", tt.name, got, tt.want)
		}
		if got.RecordedAt.Location() != time.UTC {
			t.Errorf("%s: RecordedAt %s not UTC", tt.name, got.RecordedAt)
		}
	}
}

func TestParseRejects(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name   string
		edit   func(a map[string]Value)
		sk     string // replaces the sort key when not ""
		field  string
		reason string // substring of Reason
		msg    string // the whole Error(), when not ""
	}{
		{"missing transaction_id", func(a map[string]Value) { delete(a, AttrTransactionID) }, "", AttrTransactionID, "missing", "transaction_id: missing"},
		{"transaction_id N", func(a map[string]Value) { a[AttrTransactionID] = N("12") }, "", AttrTransactionID, "want type S, got N", `transaction_id "12": want type S, got N`},
		{"empty transaction_id", func(a map[string]Value) { a[AttrTransactionID] = S("") }, "", AttrTransactionID, "empty", "transaction_id: empty"},
		{"long transaction_id", func(a map[string]Value) { a[AttrTransactionID] = S(strings.Repeat("é", 257)) }, "", AttrTransactionID, "longer than 256 characters", ""},
		{"transaction_id bad UTF-8", func(a map[string]Value) { a[AttrTransactionID] = S("a\xffb") }, "", AttrTransactionID, "not valid UTF-8", `transaction_id "a\xffb": not valid UTF-8`},
		{"transaction_id control", func(a map[string]Value) { a[AttrTransactionID] = S("a\nb") }, "", AttrTransactionID, "contains character U+000A", ""},

		{"missing agency_id", func(a map[string]Value) { delete(a, AttrAgencyID) }, "", AttrAgencyID, "missing", ""},
		{"agency_id other type", func(a map[string]Value) { a[AttrAgencyID] = Value{Type: Other, Text: "L"} }, "", AttrAgencyID, "want type S, got other", ""},
		{"empty agency_id", func(a map[string]Value) { a[AttrAgencyID] = S("") }, "", AttrAgencyID, "empty", ""},
		{"agency_id 129 runes", func(a map[string]Value) { a[AttrAgencyID] = S(strings.Repeat("日", 129)) }, "", AttrAgencyID, "longer than 128 characters", ""},
		{"agency_id newline", func(a map[string]Value) { a[AttrAgencyID] = S("acme\n") }, "", AttrAgencyID, "U+000A", `agency_id "acme\n": contains character U+000A`},
		{"agency_id tab", func(a map[string]Value) { a[AttrAgencyID] = S("a\tb") }, "", AttrAgencyID, "U+0009", ""},
		{"agency_id zero-width space", func(a map[string]Value) { a[AttrAgencyID] = S("a\u200bb") }, "", AttrAgencyID, "U+200B", ""},
		{"agency_id bidi override", func(a map[string]Value) { a[AttrAgencyID] = S("a\u202eb") }, "", AttrAgencyID, "U+202E", ""},
		{"agency_id no-break space", func(a map[string]Value) { a[AttrAgencyID] = S("a\u00a0b") }, "", AttrAgencyID, "U+00A0", ""},
		{"agency_id DEL", func(a map[string]Value) { a[AttrAgencyID] = S("a\x7fb") }, "", AttrAgencyID, "U+007F", ""},
		{"agency_id bad UTF-8", func(a map[string]Value) { a[AttrAgencyID] = S("\xc3") }, "", AttrAgencyID, "not valid UTF-8", ""},
		{"agency_id escaped too long", func(a map[string]Value) { a[AttrAgencyID] = S(strings.Repeat("日", 27)) }, "", AttrAgencyID, "escaped for the report's object key it is 243 bytes, over 240", ""},
		{"agency_id 128 punctuation", func(a map[string]Value) { a[AttrAgencyID] = S(strings.Repeat("!", 128)) }, "", AttrAgencyID, "384 bytes", ""},

		{"missing currency", func(a map[string]Value) { delete(a, AttrCurrency) }, "", AttrCurrency, "missing", ""},
		{"currency N", func(a map[string]Value) { a[AttrCurrency] = N("840") }, "", AttrCurrency, "want type S, got N", ""},
		{"unknown currency", func(a map[string]Value) { a[AttrCurrency] = S("ABC") }, "", AttrCurrency, "unknown ISO 4217 currency", `currency "ABC": unknown ISO 4217 currency`},
		{"lowercase currency", func(a map[string]Value) { a[AttrCurrency] = S("usd") }, "", AttrCurrency, "unknown", ""},
		{"non-currency XAU", func(a map[string]Value) { a[AttrCurrency] = S("XAU") }, "", AttrCurrency, "unknown", ""},

		{"missing amount", func(a map[string]Value) { delete(a, AttrAmount) }, "", AttrAmount, "missing", "amount: missing"},
		{"amount S", func(a map[string]Value) { a[AttrAmount] = S("19.99") }, "", AttrAmount, "want type N, got S", `amount "19.99": want type N, got S`},
		{"amount too many digits", func(a map[string]Value) { a[AttrAmount] = N("19.999") }, "", AttrAmount, "", `amount "19.999": more fraction digits than USD has (2)`},
		{"amount JPY fraction", func(a map[string]Value) { a[AttrCurrency] = S("JPY"); a[AttrAmount] = N("1.5") }, "", AttrAmount, "more fraction digits than JPY has (0)", ""},
		{"amount zero", func(a map[string]Value) { a[AttrAmount] = N("0") }, "", AttrAmount, "must be > 0", `amount "0": must be > 0`},
		{"amount negative", func(a map[string]Value) { a[AttrAmount] = N("-3.00") }, "", AttrAmount, "must be > 0",
			`amount "-3.00": must be > 0: a refund is a positive amount with kind "refund"`},
		{"currency lower case", func(a map[string]Value) { a[AttrCurrency] = S("usd") }, "", AttrCurrency, "unknown ISO 4217 currency",
			`currency "usd": unknown ISO 4217 currency: codes are upper case, write "USD"`},
		{"currency lower case unknown", func(a map[string]Value) { a[AttrCurrency] = S("abc") }, "", AttrCurrency, "unknown ISO 4217 currency",
			`currency "abc": unknown ISO 4217 currency`},
		{"amount too large for DECIMAL(18,4)", func(a map[string]Value) { a[AttrAmount] = N("100000000000000") }, "", AttrAmount, "too large for the reports' DECIMAL(18,4)", ""},
		{"amount malformed", func(a map[string]Value) { a[AttrAmount] = N("1,99") }, "", AttrAmount, "not a decimal number", ""},
		{"amount overflow", func(a map[string]Value) { a[AttrAmount] = N("1e20") }, "", AttrAmount, "out of range", ""},

		{"kind N", func(a map[string]Value) { a[AttrKind] = N("1") }, "", AttrKind, "want type S, got N", ""},
		{"kind unknown", func(a map[string]Value) { a[AttrKind] = S("Refund") }, "", AttrKind, `want "purchase" or "refund"`, `kind "Refund": want "purchase" or "refund"`},
		{"kind empty", func(a map[string]Value) { a[AttrKind] = S("") }, "", AttrKind, `want "purchase" or "refund"`, ""},

		{"bps S", func(a map[string]Value) { a[AttrCommissionBPS] = S("250") }, "", AttrCommissionBPS, "want type N, got S", ""},
		{"bps fraction", func(a map[string]Value) { a[AttrCommissionBPS] = N("2.5") }, "", AttrCommissionBPS, "not an integer", `commission_bps "2.5": not an integer`},
		{"bps negative", func(a map[string]Value) { a[AttrCommissionBPS] = N("-1") }, "", AttrCommissionBPS, "want an integer 0..10000", ""},
		{"bps too big", func(a map[string]Value) { a[AttrCommissionBPS] = N("10001") }, "", AttrCommissionBPS, "want an integer 0..10000", ""},
		{"bps huge", func(a map[string]Value) { a[AttrCommissionBPS] = N("1e30") }, "", AttrCommissionBPS, "out of range", ""},

		{"customer_id N", func(a map[string]Value) { a[AttrCustomerID] = N("7") }, "", AttrCustomerID, "want type S, got N", ""},
		{"customer_id long", func(a map[string]Value) { a[AttrCustomerID] = S(long) }, "", AttrCustomerID, "longer than 256 characters", ""},
		{"customer_id control", func(a map[string]Value) { a[AttrCustomerID] = S("c\x00") }, "", AttrCustomerID, "U+0000", ""},
		{"product_id other", func(a map[string]Value) { a[AttrProductID] = Value{Type: Other, Text: "M"} }, "", AttrProductID, "want type S, got other", ""},
		{"product_id bad UTF-8", func(a map[string]Value) { a[AttrProductID] = S("\xff") }, "", AttrProductID, "not valid UTF-8", ""},

		{"recorded_at N", func(a map[string]Value) { a[AttrRecordedAt] = N("1477186200") }, "", AttrRecordedAt, "want type S, got N", ""},
		{"recorded_at not RFC 3339", func(a map[string]Value) { a[AttrRecordedAt] = S("2016-10-23 01:30:00") }, "", AttrRecordedAt, "want an RFC 3339 time", ""},
		{"recorded_at no offset", func(a map[string]Value) { a[AttrRecordedAt] = S("2016-10-23T01:30:00") }, "", AttrRecordedAt, "want an RFC 3339 time", ""},
		{"no recorded_at, bad sort key", nil, "2016-10-23T01:30:00.short", FieldSortKey, "no recorded_at",
			`sort_key "2016-10-23T01:30:00.short": no recorded_at and the sort key encodes no time`},

		{"first bad attribute wins", func(a map[string]Value) { delete(a, AttrAgencyID); a[AttrAmount] = S("x") }, "", AttrAgencyID, "missing", ""},
	}
	for _, tt := range tests {
		it := validItem(tt.edit)
		if tt.sk != "" {
			it.SK = tt.sk
		}
		got, err := Parse(it)
		var re *RejectError
		if !errors.As(err, &re) {
			t.Errorf("%s: Parse = %+v, %v; want a *RejectError", tt.name, got, err)
			continue
		}
		if got != (Transaction{}) {
			t.Errorf("%s: Parse returned %+v with its error", tt.name, got)
		}
		if re.Field != tt.field || !strings.Contains(re.Reason, tt.reason) {
			t.Errorf("%s: got field %q reason %q; want field %q reason containing %q", tt.name, re.Field, re.Reason, tt.field, tt.reason)
		}
		if tt.msg != "" && err.Error() != tt.msg {
			t.Errorf("%s: Error() = %s; want %s", tt.name, err, tt.msg)
		}
	}
}

func TestRejectErrorTruncates(t *testing.T) {
	_, err := Parse(validItem(func(a map[string]Value) { a[AttrTransactionID] = S(strings.Repeat("ü", 300)) }))
	var re *RejectError
	if !errors.As(err, &re) {
		t.Fatalf("Parse: %v", err)
	}
	if want := strings.Repeat("ü", 32) + "..."; re.Value != want {
		t.Errorf("Value = %q, want %q", re.Value, want)
	}
	// An odd cut inside a 2-byte rune steps back to the rune start.
	_, err = Parse(validItem(func(a map[string]Value) { a[AttrTransactionID] = S("x" + strings.Repeat("ü", 300)) }))
	if !errors.As(err, &re) {
		t.Fatalf("Parse: %v", err)
	}
	if want := "x" + strings.Repeat("ü", 31) + "..."; re.Value != want {
		t.Errorf("Value = %q, want %q", re.Value, want)
	}
	if e := (&RejectError{Reason: "whole item"}); e.Error() != "whole item" {
		t.Errorf("Error() = %q", e.Error())
	}
}

func TestItemRoundTrip(t *testing.T) {
	tr := Transaction{PK: testPK, SK: testSK, ID: "txn-9", AgencyID: "ag", CustomerID: "c", ProductID: "p", Kind: Refund,
		Currency: money.Currency{Code: "BHD", Digits: 3}, Amount: 1500, BPS: 125, HasBPS: true,
		RecordedAt: time.Date(2016, 10, 23, 1, 30, 0, 7000000, time.UTC)}
	it := tr.Item()
	want := map[string]Value{
		AttrTransactionID: S("txn-9"), AttrAgencyID: S("ag"), AttrCustomerID: S("c"), AttrProductID: S("p"),
		AttrKind: S("refund"), AttrCurrency: S("BHD"), AttrAmount: N("1.500"), AttrCommissionBPS: N("125"),
		AttrRecordedAt: S("2016-10-23T01:30:00.007Z"),
	}
	if it.PK != testPK || it.SK != testSK || len(it.Attrs) != len(want) {
		t.Fatalf("Item() = %+v", it)
	}
	for k, v := range want {
		if it.Attrs[k] != v {
			t.Errorf("Item().Attrs[%s] = %+v, want %+v", k, it.Attrs[k], v)
		}
	}
	back, err := Parse(it)
	if err != nil || back != tr {
		t.Errorf("Parse(Item()) = %+v, %v; want %+v", back, err, tr)
	}

	// Optional attributes absent; Kind "" is written as purchase.
	min := Transaction{ID: "t", AgencyID: "a", Currency: money.Currency{Code: "JPY"}, Amount: 1500,
		RecordedAt: time.Date(2016, 10, 23, 1, 30, 0, 0, time.FixedZone("x", 3600))}
	it = min.Item()
	for _, k := range []string{AttrCommissionBPS, AttrCustomerID, AttrProductID} {
		if _, ok := it.Attrs[k]; ok {
			t.Errorf("Item() has %s", k)
		}
	}
	if it.Attrs[AttrKind] != S("purchase") || it.Attrs[AttrAmount] != N("1500") || it.Attrs[AttrRecordedAt] != S("2016-10-23T00:30:00.000Z") {
		t.Errorf("Item() = %+v", it.Attrs)
	}
}

func TestFingerprint(t *testing.T) {
	base := Transaction{PK: testPK, SK: testSK, ID: "txn-1", AgencyID: "ag", CustomerID: "c", ProductID: "p", Kind: Purchase,
		Currency: money.Currency{Code: "USD", Digits: 2}, Amount: 1999, BPS: 100, HasBPS: true,
		RecordedAt: time.Date(2016, 10, 23, 1, 30, 0, 0, time.UTC)}
	fp := base.Fingerprint()

	same := []func(*Transaction){
		func(t *Transaction) { t.PK = "201610230145#2" },
		func(t *Transaction) { t.SK = "2016-10-23T01:31:00.1111111111111111" },
		func(t *Transaction) { t.RecordedAt = t.RecordedAt.Add(time.Hour) },
	}
	for i, edit := range same {
		tr := base
		edit(&tr)
		if tr.Fingerprint() != fp {
			t.Errorf("same[%d]: fingerprint changed", i)
		}
	}
	kindless := base
	kindless.Kind = ""
	if kindless.Fingerprint() != fp {
		t.Error("Kind \"\" and purchase fingerprint differently")
	}
	noBPS1, noBPS2 := base, base
	noBPS1.HasBPS, noBPS2.HasBPS, noBPS2.BPS = false, false, 0
	if noBPS1.Fingerprint() != noBPS2.Fingerprint() {
		t.Error("BPS counted without HasBPS")
	}

	differ := []func(*Transaction){
		func(t *Transaction) { t.ID = "txn-2" },
		func(t *Transaction) { t.AgencyID = "ag2" },
		func(t *Transaction) { t.CustomerID = "" },
		func(t *Transaction) { t.ProductID = "q" },
		func(t *Transaction) { t.Kind = Refund },
		func(t *Transaction) { t.Currency = money.Currency{Code: "EUR", Digits: 2} },
		func(t *Transaction) { t.Amount = 2000 },
		func(t *Transaction) { t.BPS = 101 },
		func(t *Transaction) { t.HasBPS = false },
		func(t *Transaction) { t.BPS = 0 }, // an explicit 0 bps is not "no bps"
		// Field boundaries are unambiguous.
		func(t *Transaction) { t.CustomerID, t.ProductID = "cp", "" },
		func(t *Transaction) { t.AgencyID, t.CustomerID = "agc", "" },
	}
	seen := map[[32]byte]int{fp: -1}
	for i, edit := range differ {
		tr := base
		edit(&tr)
		got := tr.Fingerprint()
		if j, ok := seen[got]; ok {
			t.Errorf("differ[%d]: fingerprint equals case %d", i, j)
		}
		seen[got] = i
	}
	// Retried write: same content, new time and keys, one fingerprint.
	a, errA := Parse(validItem(func(a map[string]Value) { a[AttrRecordedAt] = S("2016-10-23T01:30:00Z") }))
	b, errB := Parse(Item{PK: "201610230145", SK: "2016-10-23T01:46:00.2222222222222222", Attrs: validItem(func(a map[string]Value) {
		a[AttrAmount] = N("1.999e1")
		a[AttrRecordedAt] = S("2016-10-23T01:46:00Z")
	}).Attrs})
	if errA != nil || errB != nil || a.Fingerprint() != b.Fingerprint() {
		t.Errorf("retry: %v %v, fingerprints differ: %x %x", errA, errB, a.Fingerprint(), b.Fingerprint())
	}
}

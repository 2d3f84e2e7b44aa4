package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
)

// The end-to-end fixture: hourly periods from 2024-03-01T00:00Z, a run at
// 03:02Z (three periods due), and one transaction in the fourth period that
// must not be reported yet.
var (
	e2eStart = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	e2eNow   = e2eStart.Add(3*time.Hour + 2*time.Minute)
	longID   = strings.Repeat("z", 127) + "é" // 128 characters, 129 bytes
)

// fxTx is one transaction of the fixture as a producer sends it.
type fxTx struct {
	id, agency, amount, currency, kind string
	bps                                *int
	at                                 time.Time
	amountAsNumber                     bool
}

func bps(n int) *int { return &n }

func at(hh, mm, ss int) time.Time {
	return e2eStart.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute + time.Duration(ss)*time.Second)
}

// handTx are the hand-written transactions, ingested through `reportjob ingest`.
var handTx = []fxTx{
	{id: "t1", agency: "acme", amount: "19.99", currency: "USD", at: at(0, 5, 0), amountAsNumber: true}, // 199.9c -> 200
	{id: "t2", agency: "acme", amount: "0.05", currency: "USD", at: at(0, 10, 0)},                       // 0.5c -> 0 (half to even)
	{id: "t3", agency: "acme", amount: "0.15", currency: "USD", at: at(0, 10, 1)},                       // 1.5c -> 2
	{id: "t4", agency: "acme", amount: "1500", currency: "JPY", at: at(0, 20, 0), amountAsNumber: true},
	{id: "t5", agency: "acme", amount: "5.00", currency: "USD", kind: "refund", at: at(0, 30, 0)},
	{id: "t6", agency: "beta", amount: "1.005", currency: "BHD", bps: bps(250), at: at(0, 40, 0)}, // 25.125 fils -> 25
	{id: "t7", agency: "../x", amount: "10.00", currency: "EUR", at: at(0, 41, 0)},
	{id: "t8", agency: "a/b", amount: "10", currency: "EUR", bps: bps(0), at: at(0, 42, 0)},
	{id: "t9", agency: "%", amount: "3.33", currency: "USD", at: at(0, 43, 0)},
	{id: "t10", agency: "Agence Étoile", amount: "100", currency: "JPY", bps: bps(10000), at: at(0, 44, 0)},
	{id: "t11", agency: longID, amount: "7.77", currency: "USD", at: at(0, 45, 0)},
	{id: "t12", agency: "=cmd|' /C calc'!A0", amount: "1.00", currency: "USD", at: at(0, 46, 0)},
	{id: "t13", agency: "acme", amount: "99999999.99", currency: "USD", at: at(1, 15, 0)},
	{id: "t14", agency: "acme", amount: "0.01", currency: "USD", at: at(1, 59, 59)},
	{id: "t15", agency: "beta", amount: "2.500", currency: "BHD", at: at(1, 0, 0)},  // agency rate 1200
	{id: "t16", agency: "acme", amount: "42.00", currency: "USD", at: at(3, 0, 30)}, // not due yet
	// ISO 4217 minor units that CLDR gets wrong or does not know.
	{id: "t17", agency: "andes", amount: "25946.27", currency: "COP", at: at(1, 1, 0)},
	{id: "t18", agency: "andes", amount: "906.414", currency: "IQD", at: at(1, 2, 0)},
	{id: "t19", agency: "andes", amount: "1.2345", currency: "CLF", at: at(1, 3, 0)},
	{id: "t20", agency: "andes", amount: "12.34", currency: "VES", at: at(1, 4, 0)},
	// A period total past 10^18 minor units (and past DECIMAL(18,4)): the
	// largest single amount a line item holds, twice.
	{id: "t21", agency: "whale", amount: "99999999999999.9999", currency: "CLF", at: at(1, 5, 0)},
	{id: "t22", agency: "whale", amount: "99999999999999.9999", currency: "CLF", at: at(1, 6, 0)},
}

// The commission config of the e2e harness.
const e2eCommissionYAML = "commission: {default_bps: 1000, agencies: {beta: 1200}}"

func rateOf(agency string, own *int) int {
	switch {
	case own != nil:
		return *own
	case agency == "beta":
		return 1200
	}
	return 1000
}

// rawItem is an item written straight into the table by a producer that is
// not our ingest package (seed 001's Rails app): plain quarter partition,
// random base58 suffix, attributes as it likes them.
type rawItem struct {
	pk, sk string
	attrs  map[string]item.Value
	// billed: the transaction it bills, when it is valid and not a duplicate.
	billed *fxTx
	// reject: the field named in rejects.jsonl ("" for a valid item).
	reject string
}

func railsKeys(t time.Time) (string, string) {
	return keys.Quarter(t), keys.SortKey(t, keys.RandomSuffix())
}

func rawItems() []rawItem {
	var out []rawItem
	add := func(t time.Time, attrs map[string]item.Value, billed *fxTx, reject string) {
		pk, sk := railsKeys(t)
		out = append(out, rawItem{pk: pk, sk: sk, attrs: attrs, billed: billed, reject: reject})
	}
	valid := func(id, agency, amount, cur string) map[string]item.Value {
		return map[string]item.Value{"transaction_id": item.S(id), "agency_id": item.S(agency), "amount": item.N(amount), "currency": item.S(cur)}
	}
	// A valid item, then the producer's retry of it a second later: same
	// content, new keys. Billed once.
	add(at(0, 7, 0), valid("raw-1", "acme", "2.50", "USD"), &fxTx{id: "raw-1", agency: "acme", amount: "2.50", currency: "USD", at: at(0, 7, 0)}, "")
	add(at(0, 7, 1), valid("raw-1", "acme", "2.50", "USD"), nil, "")
	// Two items with one transaction_id and different amounts: both rejected.
	add(at(1, 20, 0), valid("raw-conflict", "acme", "1.00", "USD"), nil, "transaction_id")
	add(at(1, 21, 0), valid("raw-conflict", "acme", "2.00", "USD"), nil, "transaction_id")
	bad := func(id string, mutate func(map[string]item.Value)) map[string]item.Value {
		m := valid(id, "acme", "1.00", "USD")
		mutate(m)
		return m
	}
	add(at(0, 50, 0), bad("raw-cur", func(m map[string]item.Value) { m["currency"] = item.S("XYZ") }), nil, "currency")
	add(at(0, 51, 0), bad("raw-digits", func(m map[string]item.Value) { m["amount"] = item.N("1.999") }), nil, "amount")
	add(at(0, 52, 0), bad("raw-string-amount", func(m map[string]item.Value) { m["amount"] = item.S("5.00") }), nil, "amount")
	add(at(0, 53, 0), bad("raw-no-agency", func(m map[string]item.Value) { delete(m, "agency_id") }), nil, "agency_id")
	add(at(1, 30, 0), bad("raw-kind", func(m map[string]item.Value) { m["kind"] = item.S("gift") }), nil, "kind")
	add(at(1, 31, 0), bad("raw-bps", func(m map[string]item.Value) { m["commission_bps"] = item.N("10001") }), nil, "commission_bps")
	add(at(1, 32, 0), bad("raw-ctl", func(m map[string]item.Value) { m["agency_id"] = item.S("bad\nagency") }), nil, "agency_id")
	add(at(1, 33, 0), bad("raw-negative", func(m map[string]item.Value) { m["amount"] = item.N("-3.00") }), nil, "amount")
	return out
}

// fixtureJSONL is the hand transactions plus n generated ones in the third
// period, as JSON Lines, and every transaction it carries.
func fixtureJSONL(t *testing.T, n int) (string, []fxTx) {
	t.Helper()
	var b bytes.Buffer
	all := append([]fxTx(nil), handTx...)
	for _, tx := range handTx {
		m := map[string]any{"transaction_id": tx.id, "agency_id": tx.agency, "currency": tx.currency,
			"recorded_at": tx.at.Format(time.RFC3339), "customer_id": "cust-" + tx.id}
		if tx.amountAsNumber {
			m["amount"] = json.Number(tx.amount)
		} else {
			m["amount"] = tx.amount
		}
		if tx.kind != "" {
			m["kind"] = tx.kind
		}
		if tx.bps != nil {
			m["commission_bps"] = *tx.bps
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	err := ingest.GenerateRecords(ingest.GenerateOptions{N: n, Agencies: 40, Seed: 7, From: at(2, 0, 0), To: at(3, 0, 0)},
		func(r ingest.Record) error {
			line, err := json.Marshal(r)
			if err != nil {
				return err
			}
			b.Write(line)
			b.WriteByte('\n')
			kind := r.Kind
			all = append(all, fxTx{id: r.TransactionID, agency: r.AgencyID, amount: r.Amount, currency: r.Currency, kind: kind, bps: r.CommissionBPS, at: r.RecordedAt})
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), all
}

// refDigits is the test's own table of ISO 4217 minor units, independent
// of the money package.
var refDigits = map[string]int{"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0, "BHD": 3, "COP": 2, "IQD": 3, "CLF": 4, "VES": 2}

// refMinor converts a decimal amount to minor units with math/big.
func refMinor(t testing.TB, amount, cur string) *big.Int {
	r, ok := new(big.Rat).SetString(amount)
	if !ok {
		t.Fatalf("fixture amount %q", amount)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(refDigits[cur])), nil)))
	if !r.IsInt() {
		t.Fatalf("fixture amount %q has too many digits for %s", amount, cur)
	}
	return r.Num()
}

// refCommission is amount*bps/10000 rounded half to even, with math/big.
func refCommission(minor *big.Int, bps int) *big.Int {
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(minor, big.NewInt(int64(bps))), big.NewInt(10000), new(big.Int))
	switch twice := new(big.Int).Mul(r, big.NewInt(2)); twice.Cmp(big.NewInt(10000)) {
	case 1:
		q.Add(q, big.NewInt(1))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// refRow is an expected summary row, amounts as DECIMAL(38,4) unscaled.
type refRow struct {
	purchases, refunds                int64
	gross, refundAmt, net, commission *big.Int
}

type refKey struct {
	period      time.Time
	agency, cur string
}

// expected computes every summary row the job must write for the periods
// before until.
func expected(t testing.TB, txs []fxTx, until time.Time) map[refKey]*refRow {
	out := map[refKey]*refRow{}
	for _, tx := range txs {
		if !tx.at.Before(until) {
			continue
		}
		k := refKey{tx.at.Truncate(time.Hour), tx.agency, tx.currency}
		r := out[k]
		if r == nil {
			r = &refRow{gross: new(big.Int), refundAmt: new(big.Int), net: new(big.Int), commission: new(big.Int)}
			out[k] = r
		}
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(4-refDigits[tx.currency])), nil)
		minor := refMinor(t, tx.amount, tx.currency)
		c := refCommission(minor, rateOf(tx.agency, tx.bps))
		amt4, c4 := new(big.Int).Mul(minor, scale), new(big.Int).Mul(c, scale)
		if tx.kind == "refund" {
			r.refunds++
			r.refundAmt.Add(r.refundAmt, amt4)
			r.net.Sub(r.net, amt4)
			r.commission.Sub(r.commission, c4)
		} else {
			r.purchases++
			r.gross.Add(r.gross, amt4)
			r.net.Add(r.net, amt4)
			r.commission.Add(r.commission, c4)
		}
	}
	return out
}

// summaryRec reads summary.parquet back (an independent struct, not the
// writer's).
type summaryRec struct {
	PeriodStart   time.Time `parquet:"period_start,timestamp(millisecond)"`
	PeriodEnd     time.Time `parquet:"period_end,timestamp(millisecond)"`
	AgencyID      string    `parquet:"agency_id"`
	Currency      string    `parquet:"currency"`
	PurchaseCount int64     `parquet:"purchase_count"`
	RefundCount   int64     `parquet:"refund_count"`
	Gross         [16]byte  `parquet:"gross_amount,decimal(4:38)"`
	Refunds       [16]byte  `parquet:"refund_amount,decimal(4:38)"`
	Net           [16]byte  `parquet:"net_amount,decimal(4:38)"`
	Commission    [16]byte  `parquet:"commission_amount,decimal(4:38)"`
}

// dec38 decodes a DECIMAL(38,4) FIXED_LEN_BYTE_ARRAY(16): big-endian two's
// complement.
func dec38(b [16]byte) *big.Int {
	v := new(big.Int).SetBytes(b[:])
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return v
}

type lineRec struct {
	TransactionID string    `parquet:"transaction_id"`
	AgencyID      string    `parquet:"agency_id"`
	Kind          string    `parquet:"kind"`
	Currency      string    `parquet:"currency"`
	Amount        int64     `parquet:"amount,decimal(4:18)"`
	Commission    int64     `parquet:"commission_amount,decimal(4:18)"`
	BPS           int32     `parquet:"commission_bps"`
	RecordedAt    time.Time `parquet:"recorded_at,timestamp(millisecond)"`
	PartitionKey  string    `parquet:"partition_key"`
	SortKey       string    `parquet:"sort_key"`
}

func readParquet[T any](t testing.TB, name string, b []byte) []T {
	t.Helper()
	rows, err := parquet.Read[T](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return rows
}

func (r *refRow) String() string {
	return fmt.Sprintf("purchases=%d refunds=%d gross=%s refunds=%s net=%s commission=%s",
		r.purchases, r.refunds, r.gross, r.refundAmt, r.net, r.commission)
}

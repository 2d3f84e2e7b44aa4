package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// The bad-data suite writes hostile items straight into the table (the
// embedded file through the store, DynamoDB Local with the plain SDK's
// PutItem, as a producer that does not use our ingest would), beside valid
// ones, runs the CLI once, and reads what it delivered: each hostile item
// is a reject naming its field with a specific reason, the valid ones are
// billed to the minor unit, and the run exits 0.

// bdPeriod is the one period of the suite, due at bdNow.
var (
	bdPeriod = report.Period{Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)}
	bdNow    = "2024-03-01T01:02:00Z"
)

// hostile is one item written straight into the table and what the run
// must make of it.
type hostile struct {
	name   string
	edit   func(m map[string]types.AttributeValue) // applied to a valid item
	sk     string                                  // the sort key, when not the derived one
	field  string                                  // the reject's field; "" when billed
	reason string                                  // part of the reject's reason
	// embeddedOnly: DynamoDB cannot hold it (the SDK writes invalid UTF-8
	// as U+FFFD). ddbRefuses: DynamoDB refuses the PutItem, which the
	// suite checks instead.
	embeddedOnly, ddbRefuses bool
	key                      string // the sort key it was stored under (set by putHostile)
}

func avS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func avN(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

func set(name string, v types.AttributeValue) func(map[string]types.AttributeValue) {
	return func(m map[string]types.AttributeValue) { m[name] = v }
}

func edits(fns ...func(map[string]types.AttributeValue)) func(map[string]types.AttributeValue) {
	return func(m map[string]types.AttributeValue) {
		for _, fn := range fns {
			fn(m)
		}
	}
}

func del(name string) func(map[string]types.AttributeValue) {
	return func(m map[string]types.AttributeValue) { delete(m, name) }
}

// hostileItems are the suite's items: the hostile ones and the valid ones
// beside them.
func hostileItems() []hostile {
	big := strings.Repeat("x", 390_000) // an item of ~390 KB: DynamoDB's limit is 400 KB
	return []hostile{
		// Missing fields and wrong attribute types.
		{name: "no-id", edit: del("transaction_id"), field: "transaction_id", reason: "missing"},
		{name: "no-agency", edit: del("agency_id"), field: "agency_id", reason: "missing"},
		{name: "no-amount", edit: del("amount"), field: "amount", reason: "missing"},
		{name: "no-currency", edit: del("currency"), field: "currency", reason: "missing"},
		{name: "id-N", edit: set("transaction_id", avN("42")), field: "transaction_id", reason: "want type S, got N"},
		{name: "amount-S", edit: set("amount", avS("19.99")), field: "amount", reason: "want type N, got S"},
		{name: "agency-BOOL", edit: set("agency_id", &types.AttributeValueMemberBOOL{Value: true}), field: "agency_id", reason: "want type S, got other"},
		{name: "amount-L", edit: set("amount", &types.AttributeValueMemberL{Value: []types.AttributeValue{avN("1")}}), field: "amount", reason: "want type N, got other"},
		{name: "currency-M", edit: set("currency", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"code": avS("USD")}}), field: "currency", reason: "want type S, got other"},
		{name: "kind-NULL", edit: set("kind", &types.AttributeValueMemberNULL{Value: true}), field: "kind", reason: "want type S, got other"},
		{name: "customer-B", edit: set("customer_id", &types.AttributeValueMemberB{Value: []byte{0, 1}}), field: "customer_id", reason: "want type S, got other"},
		{name: "product-SS", edit: set("product_id", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}), field: "product_id", reason: "want type S, got other"},
		{name: "bps-NS", edit: set("commission_bps", &types.AttributeValueMemberNS{Value: []string{"1"}}), field: "commission_bps", reason: "want type N, got other"},
		// Amounts.
		{name: "amount-zero", edit: set("amount", avN("0")), field: "amount", reason: "must be > 0"},
		{name: "amount-minus-zero", edit: set("amount", avN("-0.00")), field: "amount", reason: "must be > 0"},
		{name: "amount-negative", edit: set("amount", avN("-3.00")), field: "amount", reason: "must be > 0"},
		{name: "amount-38-digits", edit: set("amount", avN("12345678901234567890123456789012345678")), field: "amount", reason: "out of range"},
		{name: "amount-40-digits", edit: set("amount", avN("1234567890123456789012345678901234567890")), field: "amount", reason: "out of range", ddbRefuses: true},
		{name: "amount-max-dynamodb", edit: set("amount", avN("9.9E+125")), field: "amount", reason: "out of range"},
		{name: "amount-past-decimal18", edit: set("amount", avN("100000000000000")), field: "amount", reason: "DECIMAL(18,4)"},
		{name: "amount-tiny", edit: set("amount", avN("1E-130")), field: "amount", reason: "more fraction digits than USD has (2)"},
		{name: "amount-NaN", edit: set("amount", avN("NaN")), field: "amount", reason: "not a decimal number", ddbRefuses: true},
		{name: "amount-Infinity", edit: set("amount", avN("Infinity")), field: "amount", reason: "not a decimal number", ddbRefuses: true},
		{name: "amount-1e400", edit: set("amount", avN("1e400")), field: "amount", reason: "out of range", ddbRefuses: true},
		{name: "amount-NaN-S", edit: set("amount", avS("NaN")), field: "amount", reason: "want type N, got S"},
		{name: "amount-3-digits", edit: set("amount", avN("19.999")), field: "amount", reason: "more fraction digits than USD has (2)"},
		{name: "amount-JPY-fraction", edit: edits(set("currency", avS("JPY")), set("amount", avN("1.5"))),
			field: "amount", reason: "more fraction digits than JPY has (0)"},
		// Currencies.
		{name: "currency-lower", edit: set("currency", avS("usd")), field: "currency", reason: "unknown ISO 4217 currency"},
		{name: "currency-unknown", edit: set("currency", avS("XYZ")), field: "currency", reason: "unknown ISO 4217 currency"},
		{name: "currency-no-minor-unit", edit: set("currency", avS("XAU")), field: "currency", reason: "unknown ISO 4217 currency"},
		{name: "currency-withdrawn", edit: set("currency", avS("DEM")), field: "currency", reason: "unknown ISO 4217 currency"},
		// Text: non-UTF-8, control characters, sizes.
		{name: "agency-not-utf8", edit: set("agency_id", avS("acme\xff")), field: "agency_id", reason: "not valid UTF-8", embeddedOnly: true},
		{name: "id-not-utf8", edit: set("transaction_id", avS("\xc3\x28")), field: "transaction_id", reason: "not valid UTF-8", embeddedOnly: true},
		{name: "agency-bell", edit: set("agency_id", avS("ac\x07me")), field: "agency_id", reason: "contains character U+0007"},
		{name: "agency-zero-width", edit: set("agency_id", avS("ac\u200bme")), field: "agency_id", reason: "contains character U+200B"},
		{name: "agency-tab", edit: set("agency_id", avS("ac\tme")), field: "agency_id", reason: "contains character U+0009"},
		{name: "id-NUL", edit: set("transaction_id", avS("tx\x00")), field: "transaction_id", reason: "contains character U+0000"},
		{name: "id-empty", edit: set("transaction_id", avS("")), field: "transaction_id", reason: "empty"},
		{name: "customer-newline", edit: set("customer_id", avS("c\r\n=1")), field: "customer_id", reason: "contains character U+000D"},
		{name: "agency-too-long", edit: set("agency_id", avS(strings.Repeat("a", 129))), field: "agency_id", reason: "longer than 128 characters"},
		{name: "agency-key-too-long", edit: set("agency_id", avS(strings.Repeat("日", 27))), field: "agency_id", reason: "over 240"},
		{name: "product-400KB", edit: set("product_id", avS(big)), field: "product_id", reason: "longer than 256 characters"},
		// Other fields.
		{name: "kind-sale", edit: set("kind", avS("sale")), field: "kind", reason: `want "purchase" or "refund"`},
		{name: "bps-fraction", edit: set("commission_bps", avN("12.5")), field: "commission_bps", reason: "not an integer"},
		{name: "bps-high", edit: set("commission_bps", avN("10001")), field: "commission_bps", reason: "want an integer 0..10000"},
		{name: "recorded-at-text", edit: set("recorded_at", avS("yesterday")), field: "recorded_at", reason: "want an RFC 3339 time"},
		{name: "recorded-at-year-minus-1", edit: set("recorded_at", avS("0000-01-01T00:00:00+01:00")), field: "recorded_at", reason: "0000 to 9999"},
		{name: "sort-key-no-time", sk: "not-a-time", field: item.FieldSortKey, reason: "encodes no time"},
		// Conflicting duplicates: one id, two amounts; both are rejects.
		{name: "conflict-a", edit: set("transaction_id", avS("conflict")), field: "transaction_id", reason: "conflicting duplicate: 2 items"},
		{name: "conflict-b", edit: edits(set("transaction_id", avS("conflict")), set("amount", avN("2.00"))),
			field: "transaction_id", reason: "conflicting duplicate: 2 items"},
		// Valid items beside them: billed (acme USD 19.99 + 19.99 + 5.00, JPY 1500).
		{name: "valid-1"},
		{name: "valid-1-retry", edit: set("transaction_id", avS("valid-1"))}, // identical content, other keys: counted once
		{name: "valid-exponent", edit: set("amount", avN("1.999E1"))},
		{name: "valid-jpy", edit: edits(set("currency", avS("JPY")), set("amount", avN("1500")))},
		{name: "valid-400KB", edit: func(m map[string]types.AttributeValue) {
			m["amount"] = avN("5.00")
			m["notes"] = avS(big) // an attribute outside the contract is ignored
			m["flags"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberBOOL{Value: true}}}
		}},
	}
}

// hostileItem builds the item of h: a valid acme purchase of 19.99 USD
// with id h.name, recorded in the suite's period, then h.edit.
func hostileItem(h hostile, i int) (pk, sk string, m map[string]types.AttributeValue) {
	at := bdPeriod.Start.Add(time.Duration(i) * time.Second)
	m = map[string]types.AttributeValue{
		"transaction_id": avS(h.name), "agency_id": avS("acme"), "amount": avN("19.99"), "currency": avS("USD"),
	}
	if h.edit != nil {
		h.edit(m)
	}
	sk = h.sk
	if sk == "" {
		sk = keys.SortKey(at, keys.DerivedSuffix(h.name))
	}
	return keys.Quarter(at), sk, m
}

// TestBadDataEmbedded and TestBadDataDynamoDB run the suite on each stack.
func TestBadDataEmbedded(t *testing.T) {
	h := newHarness(t, harnessOptions{start: "2024-03-01"})
	badData(t, h)
}

func TestBadDataDynamoDB(t *testing.T) {
	h := newHarness(t, harnessOptions{backend: "aws", start: "2024-03-01"})
	badData(t, h)
}

func badData(t *testing.T, h *harness) {
	h.mustRun(0, "init")
	cases := hostileItems()
	stored := h.putHostile(cases)

	out, errs, code := h.run("run", "--now", bdNow)
	if code != 0 || strings.Contains(errs, "panic") {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if secret := os.Getenv("AWS_SECRET_ACCESS_KEY"); secret != "" && strings.Contains(out+errs, secret) {
		t.Errorf("the AWS secret key is in the run's output")
	}
	sum := lastJSON(t, out)
	wantRejects, wantBilled := 0, 0
	for _, c := range stored {
		if c.field != "" {
			wantRejects++
		} else if !strings.HasSuffix(c.name, "-retry") {
			wantBilled++
		}
	}
	if sum["status"] != "ok" || sum["rejects"] != float64(wantRejects) || sum["transactions"] != float64(wantBilled) ||
		sum["duplicates_dropped"] != float64(1) || sum["items_read"] != float64(len(stored)) {
		t.Fatalf("run summary %v: want %d items read, %d rejects, %d transactions, 1 duplicate", sum, len(stored), wantRejects, wantBilled)
	}

	sk := h.sink()
	objs := h.objects()
	m, err := report.ParseManifest(h.read(sk, report.ManifestKey(bdPeriod)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Rejects != int64(wantRejects) || m.Transactions != int64(wantBilled) || m.ItemsRead != int64(len(stored)) {
		t.Errorf("manifest: %d read, %d rejects, %d transactions", m.ItemsRead, m.Rejects, m.Transactions)
	}

	// Each hostile item is one reject line, naming its field and reason.
	byKey := map[string]hostile{}
	for _, c := range stored {
		byKey[c.key] = c
	}
	seen := map[string]int{}
	for _, key := range datasetKeys(objs, report.DatasetRejects) {
		sc := bufio.NewScanner(bytes.NewReader(h.read(sk, key)))
		sc.Buffer(nil, 4<<20) // the 400 KB item's line
		for sc.Scan() {
			var r collect.Reject
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			c, ok := byKey[r.SortKey]
			switch {
			case !ok:
				t.Errorf("reject of an unknown item: %+v", r)
			case c.field == "":
				t.Errorf("%s: valid item rejected: %s %s", c.name, r.Field, r.Reason)
			case r.Field != c.field || !strings.Contains(r.Reason, c.reason) || r.PartitionKey == "":
				t.Errorf("%s: reject field %q reason %q; want %q, %q", c.name, r.Field, r.Reason, c.field, c.reason)
			case len(r.Value) > 67:
				t.Errorf("%s: reject value of %d bytes", c.name, len(r.Value))
			}
			seen[c.name]++
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	for _, c := range stored {
		if c.field != "" && seen[c.name] != 1 {
			t.Errorf("%s: %d reject lines, want 1", c.name, seen[c.name])
		}
	}

	// The valid items are billed, to the minor unit.
	var files []string
	for _, f := range m.Files {
		files = append(files, f.Key)
	}
	rows := map[string]summaryRec{}
	for _, key := range datasetKeys(objs, report.DatasetSummary) {
		for _, r := range readParquet[summaryRec](t, key, h.read(sk, key)) {
			rows[r.AgencyID+"/"+r.Currency] = r
		}
	}
	if len(rows) != 2 {
		t.Errorf("summary rows %v: want acme USD and JPY only", rows)
	}
	if r := rows["acme/USD"]; r.PurchaseCount != 3 || dec38(r.Gross).Int64() != 449800 || dec38(r.Commission).Int64() != 45000 {
		t.Errorf("acme USD: %d purchases, gross %s, commission %s; want 3, 44.9800, 4.5000", r.PurchaseCount, dec38(r.Gross), dec38(r.Commission))
	}
	if r := rows["acme/JPY"]; r.PurchaseCount != 1 || dec38(r.Gross).Int64() != 15000000 {
		t.Errorf("acme JPY: %d purchases, gross %s; want 1, 1500.0000", r.PurchaseCount, dec38(r.Gross))
	}
	// Only acme has a folder: a reject never makes an agency's files.
	for k := range objs {
		if a, ok := report.AgencySegment(k); ok && a != "acme" {
			t.Errorf("%s: a folder for agency %q, which has only rejects", k, a)
		}
	}
	if v := h.mustRun(0, "verify", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T01:00:00Z", "--now", bdNow); v["status"] != "ok" {
		t.Errorf("verify: %v", v)
	}
	t.Logf("%s: %d items stored, %d rejects, %d billed, files %q", h.backend, len(stored), wantRejects, wantBilled, files)
}

// putHostile writes the cases into the table and returns those stored: on
// DynamoDB, the ones it refuses are checked to be refused and left out.
func (h *harness) putHostile(cases []hostile) []hostile {
	h.t.Helper()
	var stored []hostile
	if h.backend == "embedded" {
		var items []item.Item
		for i, c := range cases {
			pk, sk, m := hostileItem(c, i)
			items = append(items, item.Item{PK: pk, SK: sk, Attrs: embeddedAttrs(m)})
			c.key = sk
			stored = append(stored, c)
		}
		h.withStore(func(st *store) {
			if err := st.PutItems(context.Background(), items); err != nil {
				h.t.Fatal(err)
			}
		})
		return stored
	}
	ctx := context.Background()
	cfg := h.cli().cfg
	client, err := dynamodb.NewClient(ctx, dynamodb.ClientConfig{Region: "us-east-1", Endpoint: cfg.Store.DynamoDB.Endpoint})
	if err != nil {
		h.t.Fatal(err)
	}
	for i, c := range cases {
		if c.embeddedOnly {
			continue
		}
		pk, sk, m := hostileItem(c, i)
		m[cfg.Keys.PartitionAttr], m[cfg.Keys.SortAttr] = avS(pk), avS(sk)
		_, err := client.PutItem(ctx, &awsddb.PutItemInput{TableName: aws.String(cfg.Store.DynamoDB.Table), Item: m})
		switch {
		case c.ddbRefuses && err == nil:
			h.t.Errorf("%s: DynamoDB stored it; the suite expects a ValidationException", c.name)
		case c.ddbRefuses:
		case err != nil:
			h.t.Fatalf("%s: %v", c.name, err)
		default:
			c.key = sk
			stored = append(stored, c)
		}
	}
	return stored
}

// embeddedAttrs is what the embedded store holds for a DynamoDB item: S
// and N with their text, any other type as item.Other (its type name).
func embeddedAttrs(m map[string]types.AttributeValue) map[string]item.Value {
	out := map[string]item.Value{}
	for name, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[name] = item.S(v.Value)
		case *types.AttributeValueMemberN:
			out[name] = item.N(v.Value)
		default:
			out[name] = item.Value{Type: item.Other, Text: strings.TrimPrefix(fmt.Sprintf("%T", v), "*types.AttributeValueMember")}
		}
	}
	return out
}

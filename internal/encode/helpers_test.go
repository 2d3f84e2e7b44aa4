package encode

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// update rewrites the golden files in testdata/ (go test -update). It is
// the only flag of this test binary named "update".
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Currencies of the fixtures, from the ISO 4217 table: USD 2 digits, JPY
// 0, BHD 3, CLF 4.
var (
	usd = mustCurrency("USD")
	jpy = mustCurrency("JPY")
	bhd = mustCurrency("BHD")
	clf = mustCurrency("CLF")
)

func mustCurrency(code string) money.Currency {
	c, err := money.LookupCurrency(code)
	if err != nil {
		panic(err)
	}
	return c
}

// tot parses an exact amount in c's major units ("19.99", "-1.500") into a
// Total; it panics on bad text (fixtures only).
func tot(c money.Currency, s string) money.Total {
	t, err := money.ParseTotal(s, c)
	if err != nil {
		panic(err)
	}
	return t
}

// testPeriod is the period of every fixture: 2024-05-01 10:00-11:00 UTC.
var testPeriod = report.Period{
	Start: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
	End:   time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC),
}

const (
	hyperlinkAgency = `=HYPERLINK("http://x","y")`
	bigAmount       = "123456789012345678901.23"  // USD, past 10^18 (and 2^64) minor units
	bigRefunds      = "987654321098765432109.87"  // USD
	bigNet          = "-864197532086419753208.64" // bigAmount - bigRefunds
	bigCommission   = "-86419753208641975320.86"
)

// sumRow builds a summary row of testPeriod; amounts are exact decimals in
// c's major units, in the order gross, refunds, net, commission.
func sumRow(agency string, c money.Currency, purchases, refunds int64, amounts ...string) report.SummaryRow {
	return report.SummaryRow{
		PeriodStart: testPeriod.Start, PeriodEnd: testPeriod.End, AgencyID: agency, Currency: c,
		PurchaseCount: purchases, RefundCount: refunds,
		Gross: tot(c, amounts[0]), Refunds: tot(c, amounts[1]), Net: tot(c, amounts[2]), Commission: tot(c, amounts[3]),
	}
}

// summaryRows are summary rows sorted by (agency, currency) covering the
// four currency scales (USD 2, JPY 0, BHD 3, CLF 4), a negative net and
// commission, totals past 10^18 minor units (positive and negative), and
// agency ids a spreadsheet would run as formulas.
func summaryRows() []report.SummaryRow {
	return []report.SummaryRow{
		sumRow("-2+3", usd, 0, 1, "0", "5.00", "-5.00", "-0.50"),
		sumRow(hyperlinkAgency, usd, 1, 0, "99999999999999.99", "0", "99999999999999.99", "0.05"),
		sumRow("agency-1", bhd, 1, 1, "1.500", "2.000", "-0.500", "-0.050"),
		sumRow("agency-1", clf, 2, 0, "1.2345", "0", "1.2345", "0.1234"),
		sumRow("agency-1", jpy, 2, 0, "1500", "0", "1500", "150"),
		sumRow("agency-1", usd, 3, 1, "59.97", "19.99", "39.98", "4.00"),
		sumRow("big", usd, 1_000_000, 2_000_000, bigAmount, bigRefunds, bigNet, bigCommission),
	}
}

// adjustmentRows are adjustments of revision 3: negative differences, an
// agency that went away (every column negative), a big total.
func adjustmentRows() []report.AdjustmentRow {
	rows := []report.SummaryRow{
		sumRow("+agency", jpy, -1, 0, "-1500", "0", "-1500", "-150"),
		sumRow("agency-1", bhd, 0, 1, "0", "0.250", "-0.250", "-0.025"),
		sumRow("agency-1", usd, 2, -1, "39.98", "-19.99", "59.97", "6.00"),
		sumRow("big", usd, 1, 0, bigAmount, "0", bigAmount, "12345678901234567890.12"),
	}
	out := make([]report.AdjustmentRow, len(rows))
	for i, r := range rows {
		out[i] = report.AdjustmentRow{SummaryRow: r, Revision: 3}
	}
	return out
}

// lineItems are the line items of the golden files, in file order
// (agency, currency, sort key): three agencies, four currencies, refunds,
// absent customer and product ids, and text cells a spreadsheet would run
// as formulas (ids and keys alike).
func lineItems() []report.LineItem {
	at := func(ms int) time.Time { return testPeriod.Start.Add(time.Duration(ms) * time.Millisecond) }
	li := func(agency string, c money.Currency, sk, id, customer, product string, kind item.Kind, amount int64, bps int32, recorded time.Time) report.LineItem {
		comm := money.Commission(amount, int64(bps))
		if kind == item.Refund {
			comm = -comm
		}
		return report.LineItem{
			Tx: item.Transaction{
				PK: "202405011000", SK: sk, ID: id, AgencyID: agency, CustomerID: customer, ProductID: product,
				Kind: kind, Currency: c, Amount: amount, BPS: bps, HasBPS: true, RecordedAt: recorded,
			},
			BPS: bps, Commission: comm,
		}
	}
	rows := []report.LineItem{
		li("+agency", jpy, "2024-05-01T10:00:01.AAAAAAAAAAAAAAAA", "=1+1", "@cust", "-prod", item.Purchase, 1500, 1000, at(1_000)),
		li("+agency", jpy, "2024-05-01T10:00:02.AAAAAAAAAAAAAAAA", "tx-2", "", "", item.Refund, 1500, 1000, at(2_345)),
		li("agency-1", bhd, "2024-05-01T10:10:00.BBBBBBBBBBBBBBBB", "tx-3", "cust-1", "prod-1", item.Purchase, 1500, 1250, at(600_000)),
		li("agency-1", clf, "2024-05-01T10:11:00.CCCCCCCCCCCCCCCC", "tx-4", "cust-1", "", item.Purchase, 12345, 1000, at(660_000)),
		li("agency-1", usd, "2024-05-01T10:20:00.DDDDDDDDDDDDDDDD", "tx-5", "", "prod-2", item.Purchase, 1999, 1200, at(1_200_000)),
		li("agency-1", usd, "2024-05-01T10:20:00.EEEEEEEEEEEEEEEE", "tx-6", "a,b", `say "hi"`, item.Refund, 500, 1200, at(1_200_999)),
		li("agency-1", usd, "2024-05-01T10:59:59.FFFFFFFFFFFFFFFF", "tx-7", "line\nbreak", "\tprod", item.Purchase, 99_999_999_999_999, 10000, at(3_599_999)),
		li("b", usd, "2024-05-01T10:30:00.GGGGGGGGGGGGGGGG", "tx-8", "cust-2", "prod-3", item.Purchase, 25, 1000, at(1_800_000)),
	}
	rows[len(rows)-1].Tx.PK = "=cmd|' /C calc'!A0" // a hostile partition key
	return rows
}

// genLineItem is row i of n synthetic line items in file order: two
// agencies, each with n/6 rows of BHD, JPY and USD; every 10th a refund;
// every 4th without customer and every 5th without product.
func genLineItem(i, n int) report.LineItem {
	g := i * 6 / n
	agency := []string{"agency-1", "agency-2"}[g/3]
	cur := []money.Currency{bhd, jpy, usd}[g%3]
	kind, sign := item.Purchase, int64(1)
	if i%10 == 9 {
		kind, sign = item.Refund, -1
	}
	amount := 1 + int64(i*7919%100_000)
	bps := int32(1000 + i%50)
	s := strconv.Itoa(i)
	tx := item.Transaction{
		PK:         "202405011000",
		SK:         "2024-05-01T10:00:00." + strings.Repeat("0", 16-len(s)) + s,
		ID:         "tx-" + s,
		AgencyID:   agency,
		Kind:       kind,
		Currency:   cur,
		Amount:     amount,
		BPS:        bps,
		HasBPS:     true,
		RecordedAt: testPeriod.Start.Add(time.Duration(i) * time.Millisecond),
	}
	if i%4 != 0 {
		tx.CustomerID = "cust-" + strconv.Itoa(i%1000)
	}
	if i%5 != 0 {
		tx.ProductID = "prod-" + strconv.Itoa(i%37)
	}
	return report.LineItem{Tx: tx, BPS: bps, Commission: sign * money.Commission(amount, int64(bps))}
}

// The agencies of the Writer fixture, sorted, with their escaped forms
// (SPEC 4: every byte outside [A-Za-z0-9._-] as %XX), written out here
// rather than computed.
var writerAgencies = []struct{ id, escaped string }{
	{"%", "%25"},
	{"../x", "..%2Fx"},
	{"a/b", "a%2Fb"},
	{"agénce", "ag%C3%A9nce"},
	{"plain", "plain"},
}

const periodName = "20240501T1000Z"

// writerLines are the fixture's line items in file order: agency i has
// i+1 line items; "a/b" has two currencies.
func writerLines() []report.LineItem {
	eur := mustCurrency("EUR")
	var out []report.LineItem
	for i, a := range writerAgencies {
		for j := range i + 1 {
			c := usd
			if a.id == "a/b" && j == 0 {
				c = eur
			}
			tx := item.Transaction{
				PK: "202405011000", SK: "2024-05-01T10:00:0" + string(rune('0'+j)) + ".AAAAAAAAAAAAAAAA",
				ID: a.escaped + "-" + string(rune('0'+j)), AgencyID: a.id, Kind: item.Purchase,
				Currency: c, Amount: 1000, RecordedAt: testPeriod.Start,
			}
			out = append(out, report.LineItem{Tx: tx, BPS: 1000, Commission: 100})
		}
	}
	return out
}

// writerSummary is the summary of writerLines.
func writerSummary() []report.SummaryRow {
	var rows []report.SummaryRow
	for _, li := range writerLines() {
		tx := &li.Tx
		if n := len(rows); n > 0 && rows[n-1].AgencyID == tx.AgencyID && rows[n-1].Currency == tx.Currency {
			r := &rows[n-1]
			r.PurchaseCount++
			r.Gross, _ = r.Gross.Add(money.TotalOf(tx.Amount))
			r.Net, r.Commission = r.Gross, money.TotalOf(r.PurchaseCount*li.Commission)
			continue
		}
		rows = append(rows, report.SummaryRow{
			PeriodStart: testPeriod.Start, PeriodEnd: testPeriod.End, AgencyID: tx.AgencyID, Currency: tx.Currency,
			PurchaseCount: 1, Gross: money.TotalOf(tx.Amount), Net: money.TotalOf(tx.Amount), Commission: money.TotalOf(li.Commission),
		})
	}
	return rows
}

// writerAdjustments changed "../x" and "plain".
func writerAdjustments() []report.AdjustmentRow {
	return []report.AdjustmentRow{
		{SummaryRow: sumRow("../x", usd, 1, 0, "10.00", "0", "10.00", "1.00"), Revision: 2},
		{SummaryRow: sumRow("plain", usd, -1, 0, "-10.00", "0", "-10.00", "-1.00"), Revision: 2},
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	if filepath.Ext(name) == ".csv" {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\ngot:\n%q\nwant:\n%q", name, got, want)
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s differs from the golden file at byte %d (got %d bytes, want %d); go test -update rewrites it",
		name, i, len(got), len(want))
}

func openParquet(t *testing.T, b []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("open parquet: %v", err)
	}
	return f
}

// writeTemp writes b to a file named name in a new temp dir.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// compareMaps reports every key of want missing or different in got, and
// every key of got not in want.
func compareMaps(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %s = %q (present %v), want %q", what, k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s = %q", what, k, v)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

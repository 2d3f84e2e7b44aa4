package aggregate

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
)

var (
	usd = mustCurrency("USD")
	eur = mustCurrency("EUR")
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

// testPeriod is 2024-05-01 10:00-11:00 UTC, given in another zone: rows
// must come out in UTC all the same.
var testPeriod = report.Period{
	Start: time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600)),
	End:   time.Date(2024, 5, 1, 13, 0, 0, 0, time.FixedZone("CEST", 2*3600)),
}

// minor parses an exact amount of c ("19.99") into minor units.
func minor(t testing.TB, c money.Currency, s string) int64 {
	t.Helper()
	v, err := money.ParseAmount(s, c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// newTx is a purchase or refund of amount (major units of c) by agency.
func newTx(t testing.TB, agency string, c money.Currency, kind item.Kind, amount string) item.Transaction {
	t.Helper()
	return item.Transaction{
		PK: "202405011000", SK: "2024-05-01T10:00:00.AAAAAAAAAAAAAAAA", ID: "tx", AgencyID: agency,
		Kind: kind, Currency: c, Amount: minor(t, c, amount), RecordedAt: testPeriod.Start.UTC(),
	}
}

// drain returns every line item of a, copied.
func drain(t *testing.T, a *Aggregator) []report.LineItem {
	t.Helper()
	lines, err := a.Lines()
	if err != nil {
		t.Fatal(err)
	}
	var out []report.LineItem
	for lines.Next() {
		out = append(out, *lines.Item())
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if lines.Next() {
		t.Error("Next after the end returned true")
	}
	return out
}

// TestCommission: amount x bps / 10000, half to even at the currency's
// minor unit, negative for a refund; the same in the summary and in the
// line item.
func TestCommission(t *testing.T) {
	tests := []struct {
		cur    money.Currency
		kind   item.Kind
		amount string
		bps    int32
		want   string
	}{
		{usd, item.Purchase, "19.99", 1200, "2.40"},  // 2.3988
		{bhd, item.Purchase, "1.500", 1250, "0.188"}, // 0.1875: half to even, up
		{usd, item.Purchase, "0.25", 1000, "0.02"},   // 0.025: half to even, down
		{usd, item.Purchase, "0.35", 1000, "0.04"},   // 0.035: half to even, up
		{usd, item.Purchase, "0.45", 1000, "0.04"},   // 0.045: half to even, down
		{usd, item.Refund, "5.00", 1200, "-0.60"},
		{usd, item.Refund, "0.25", 1000, "-0.02"}, // symmetric
		{usd, item.Refund, "0.35", 1000, "-0.04"},
		{jpy, item.Purchase, "15", 1000, "2"}, // 1.5 yen
		{jpy, item.Purchase, "25", 1000, "2"}, // 2.5 yen
		{jpy, item.Purchase, "1500", 1000, "150"},
		{clf, item.Purchase, "1.2345", 1000, "0.1234"}, // 0.12345
		{usd, item.Purchase, "19.99", 0, "0.00"},
		{usd, item.Purchase, "19.99", 10000, "19.99"},
		{usd, item.Purchase, "0.01", 4999, "0.00"},
		{usd, item.Purchase, "0.01", 5001, "0.01"},
		{usd, item.Purchase, "92233720368547758.07", 10000, "92233720368547758.07"}, // MaxInt64 cents
	}
	for _, tt := range tests {
		name := string(tt.kind) + " " + tt.amount + " " + tt.cur.Code + " x " + itoa(int64(tt.bps))
		t.Run(name, func(t *testing.T) {
			tx := newTx(t, "a", tt.cur, tt.kind, tt.amount)
			if got := tt.cur.Format(Commission(&tx, tt.bps)); got != tt.want {
				t.Errorf("Commission = %s, want %s", got, tt.want)
			}
			a := New(testPeriod, Options{Prices: pricing.Flat(tt.bps).Pricer(), LineItems: true, Dir: t.TempDir()})
			defer a.Close()
			if err := a.Add(&tx); err != nil {
				t.Fatal(err)
			}
			rows, err := a.Summary()
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.cur.FormatTotal(rows[0].Commission); got != tt.want {
				t.Errorf("summary commission = %s, want %s", got, tt.want)
			}
			lines := drain(t, a)
			if len(lines) != 1 || lines[0].BPS != tt.bps || tt.cur.Format(lines[0].Commission) != tt.want {
				t.Errorf("line items = %+v, want one at %d bps with commission %s", lines, tt.bps, tt.want)
			}
		})
	}
}

func itoa(v int64) string { return big.NewInt(v).String() }

// flatRates is a table of undated rates: def, and each agency's.
func flatRates(def int32, agencies map[string]int32) pricing.Table {
	t := pricing.Flat(def)
	t.Agencies = map[string]pricing.Schedule{}
	for id, bps := range agencies {
		t.Agencies[id] = pricing.Schedule{{BPS: bps}}
	}
	return t
}

// TestRates: the item's own rate (even 0), else its agency's (even 0),
// else the default.
func TestRates(t *testing.T) {
	r := flatRates(1000, map[string]int32{"a": 1500, "z": 0})
	tests := []struct {
		name   string
		agency string
		own    int32
		hasOwn bool
		want   int32
	}{
		{"own beats agency", "a", 200, true, 200},
		{"own 0 beats agency", "a", 0, true, 0},
		{"own beats default", "b", 300, true, 300},
		{"agency", "a", 0, false, 1500},
		{"agency 0 beats default", "z", 0, false, 0},
		{"BPS without HasBPS is not a rate", "a", 700, false, 1500},
		{"default", "b", 0, false, 1000},
		{"agency ids are exact", "A", 0, false, 1000},
	}
	dir := t.TempDir()
	a := New(testPeriod, Options{Prices: r.Pricer(), LineItems: true, Dir: dir})
	defer a.Close()
	for i, tt := range tests {
		tx := newTx(t, tt.agency, usd, item.Purchase, "100.00")
		tx.BPS, tx.HasBPS = tt.own, tt.hasOwn
		tx.SK = "2024-05-01T10:00:00." + strings.Repeat("A", 15) + string(rune('a'+i))
		if got := r.Of(&tx); got != tt.want {
			t.Errorf("%s: Of = %d, want %d", tt.name, got, tt.want)
		}
		if err := a.Add(&tx); err != nil {
			t.Fatal(err)
		}
	}
	// The line items carry the rate applied and its commission: 100.00 at
	// b bps is b cents.
	for _, li := range drain(t, a) {
		i := int(li.Tx.SK[len(li.Tx.SK)-1] - 'a')
		if want := tests[i].want; li.BPS != want || li.Commission != int64(want) {
			t.Errorf("%s: line bps %d commission %d, want %d and %d", tests[i].name, li.BPS, li.Commission, want, want)
		}
	}
}

// row builds a summary row of testPeriod (in UTC); amounts are exact
// decimals of c: gross, refunds, net, commission.
func row(agency string, c money.Currency, purchases, refunds int64, amounts ...string) report.SummaryRow {
	tot := func(s string) money.Total {
		v, err := money.ParseTotal(s, c)
		if err != nil {
			panic(err)
		}
		return v
	}
	return report.SummaryRow{
		PeriodStart: testPeriod.Start.UTC(), PeriodEnd: testPeriod.End.UTC(), AgencyID: agency, Currency: c,
		PurchaseCount: purchases, RefundCount: refunds,
		Gross: tot(amounts[0]), Refunds: tot(amounts[1]), Net: tot(amounts[2]), Commission: tot(amounts[3]),
	}
}

func checkRows(t *testing.T, got, want []report.SummaryRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i].PeriodStart.Location() != time.UTC || got[i].PeriodEnd.Location() != time.UTC {
			t.Errorf("row %d period %v..%v, want UTC", i, got[i].PeriodStart, got[i].PeriodEnd)
		}
		if got[i] != want[i] {
			t.Errorf("row %d = %s\nwant    %s", i, fmtRow(got[i]), fmtRow(want[i]))
		}
	}
}

func fmtRow(r report.SummaryRow) string {
	c := r.Currency
	return strings.Join([]string{r.PeriodStart.String(), r.AgencyID, c.Code, itoa(r.PurchaseCount), itoa(r.RefundCount),
		c.FormatTotal(r.Gross), c.FormatTotal(r.Refunds), c.FormatTotal(r.Net), c.FormatTotal(r.Commission)}, " ")
}

// TestSummary: counts, sums, net and commission per (agency, currency),
// sorted by agency then currency (bytewise: "A" before "a").
func TestSummary(t *testing.T) {
	txs := []item.Transaction{
		newTx(t, "b", usd, item.Refund, "10.00"),
		newTx(t, "a", usd, item.Purchase, "19.99"),
		newTx(t, "a", jpy, item.Purchase, "1500"),
		newTx(t, "A", eur, item.Purchase, "1.00"),
		newTx(t, "a", usd, item.Refund, "5.00"),
		newTx(t, "a", usd, item.Purchase, "5.01"),
	}
	a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer()})
	defer a.Close()
	for i := range txs {
		if err := a.Add(&txs[i]); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := a.Summary()
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, []report.SummaryRow{
		row("A", eur, 1, 0, "1.00", "0", "1.00", "0.10"),
		row("a", jpy, 1, 0, "1500", "0", "1500", "150"),
		// 2.00 + 0.50 (0.501) - 0.50
		row("a", usd, 2, 1, "25.00", "5.00", "20.00", "2.00"),
		row("b", usd, 0, 1, "0", "10.00", "-10.00", "-1.00"),
	})
	if _, err := a.Lines(); err == nil {
		t.Error("Lines without Options.LineItems: no error")
	}

	empty := New(testPeriod, Options{})
	if rows, err := empty.Summary(); err != nil || len(rows) != 0 {
		t.Errorf("empty period: %v, %v", rows, err)
	}
}

// refCommission is amount x bps / 10000 half to even, in math/big.
func refCommission(amount, bps int64) *big.Int {
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(amount), big.NewInt(bps)), big.NewInt(10000), new(big.Int))
	switch c := new(big.Int).Mul(r, big.NewInt(2)).Cmp(big.NewInt(10000)); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return q
}

// refFormat writes minor units v in d digits, independently of money.
func refFormat(v *big.Int, d int) string {
	s := new(big.Int).Abs(v).String()
	if d > 0 {
		if len(s) <= d {
			s = strings.Repeat("0", d-len(s)+1) + s
		}
		s = s[:len(s)-d] + "." + s[len(s)-d:]
	}
	if v.Sign() < 0 {
		s = "-" + s
	}
	return s
}

type bigRow struct {
	purchases, refunds           int64
	gross, refundAmt, commission *big.Int
	agencies                     map[string]bool
}

func newBigRow() *bigRow {
	return &bigRow{gross: new(big.Int), refundAmt: new(big.Int), commission: new(big.Int), agencies: map[string]bool{}}
}

func (b *bigRow) add(tx *item.Transaction, bps int32) {
	c := refCommission(tx.Amount, int64(bps))
	if tx.Kind == item.Refund {
		b.refunds++
		b.refundAmt.Add(b.refundAmt, big.NewInt(tx.Amount))
		b.commission.Sub(b.commission, c)
	} else {
		b.purchases++
		b.gross.Add(b.gross, big.NewInt(tx.Amount))
		b.commission.Add(b.commission, c)
	}
	b.agencies[tx.AgencyID] = true
}

func (b *bigRow) net() *big.Int { return new(big.Int).Sub(b.gross, b.refundAmt) }

// TestSumsPastInt64 adds amounts up to MaxInt64 minor units, so that sums
// pass int64 many times over, and checks every total against math/big,
// in the summary and in CurrencyTotals.
func TestSumsPastInt64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	agencies := []string{"a", "b", "c"}
	currencies := []money.Currency{usd, jpy, bhd}
	rates := flatRates(1000, map[string]int32{"b": 10000})
	a := New(testPeriod, Options{Prices: rates.Pricer()})
	defer a.Close()
	want := map[string]*bigRow{}   // agency currency
	perCur := map[string]*bigRow{} // currency
	for i := range 3000 {
		tx := item.Transaction{
			PK: "202405011000", SK: "sk", ID: itoa(int64(i)),
			AgencyID: agencies[r.IntN(len(agencies))], Currency: currencies[r.IntN(len(currencies))],
			Kind: item.Purchase, Amount: 1 + r.Int64N(math.MaxInt64), RecordedAt: testPeriod.Start.UTC(),
		}
		if r.IntN(3) == 0 {
			tx.Kind = item.Refund
		}
		if r.IntN(2) == 0 {
			tx.BPS, tx.HasBPS = int32(r.IntN(10001)), true
		}
		if i%500 == 0 {
			tx.Amount = math.MaxInt64
		}
		if err := a.Add(&tx); err != nil {
			t.Fatal(err)
		}
		k := tx.AgencyID + " " + tx.Currency.Code
		if want[k] == nil {
			want[k] = newBigRow()
		}
		if perCur[tx.Currency.Code] == nil {
			perCur[tx.Currency.Code] = newBigRow()
		}
		want[k].add(&tx, rates.Of(&tx))
		perCur[tx.Currency.Code].add(&tx, rates.Of(&tx))
	}
	rows, err := a.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, got := range rows {
		if i > 0 && !(rows[i-1].AgencyID < got.AgencyID || rows[i-1].AgencyID == got.AgencyID && rows[i-1].Currency.Code < got.Currency.Code) {
			t.Errorf("row %d (%s %s) not after row %d", i, got.AgencyID, got.Currency.Code, i-1)
		}
		w := want[got.AgencyID+" "+got.Currency.Code]
		if got.PurchaseCount != w.purchases || got.RefundCount != w.refunds ||
			got.Gross.String() != w.gross.String() || got.Refunds.String() != w.refundAmt.String() ||
			got.Net.String() != w.net().String() || got.Commission.String() != w.commission.String() {
			t.Errorf("row %s %s = %d %d %s %s %s %s\nwant %d %d %s %s %s %s", got.AgencyID, got.Currency.Code,
				got.PurchaseCount, got.RefundCount, got.Gross, got.Refunds, got.Net, got.Commission,
				w.purchases, w.refunds, w.gross, w.refundAmt, w.net(), w.commission)
		}
		if _, fits := got.Gross.Int64(); fits {
			t.Errorf("row %s %s gross %s fits an int64: the test does not test what it says", got.AgencyID, got.Currency.Code, got.Gross)
		}
	}

	totals, err := CurrencyTotals(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(totals) != len(currencies) {
		t.Fatalf("%d currency totals, want %d", len(totals), len(currencies))
	}
	for i, got := range totals {
		w := perCur[got.Currency]
		d := mustCurrency(got.Currency).Digits
		want := report.CurrencyTotal{
			Currency: got.Currency, Agencies: int64(len(w.agencies)),
			PurchaseCount: w.purchases, RefundCount: w.refunds,
			Gross: refFormat(w.gross, d), Refunds: refFormat(w.refundAmt, d),
			Net: refFormat(w.net(), d), Commission: refFormat(w.commission, d),
		}
		if got != want {
			t.Errorf("totals[%d] = %+v\nwant %+v", i, got, want)
		}
	}
	if totals[0].Currency != "BHD" || totals[1].Currency != "JPY" || totals[2].Currency != "USD" {
		t.Errorf("totals not sorted by currency: %s %s %s", totals[0].Currency, totals[1].Currency, totals[2].Currency)
	}
}

package report

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/duckdb"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/testenv"
)

const encSummarySchema = `message summaryRecord {
	required int64 period_start (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required int64 period_end (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required binary agency_id (STRING);
	required binary currency (STRING);
	required int64 purchase_count (INT(64,true));
	required int64 refund_count (INT(64,true));
	required int64 gross_amount (DECIMAL(18,4));
	required int64 refund_amount (DECIMAL(18,4));
	required int64 net_amount (DECIMAL(18,4));
	required int64 commission_amount (DECIMAL(18,4));
}`

const encLineItemSchema = `message lineItemRecord {
	required binary transaction_id (STRING);
	required binary agency_id (STRING);
	optional binary customer_id (STRING);
	optional binary product_id (STRING);
	required binary kind (STRING);
	required binary currency (STRING);
	required int64 amount (DECIMAL(18,4));
	required int64 commission_amount (DECIMAL(18,4));
	required int32 commission_bps (INT(32,true));
	required int64 recorded_at (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required binary partition_key (STRING);
	required binary sort_key (STRING);
}`

var encPeriodStart = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// encLineItem is row i of n synthetic line items, in file order: n/3 rows
// each of BHD, JPY and USD; every 10th a refund; every 4th without
// customer and every 5th without product.
func encLineItem(i, n int) LineItem {
	cur := []money.Currency{encBHD, encJPY, encUSD}[i*3/n]
	kind, sign := item.Purchase, int64(1)
	if i%10 == 9 {
		kind, sign = item.Refund, -1
	}
	amount := 1 + int64(i*7919%100_000)
	bps := int32(1000 + i%50)
	n16 := strconv.Itoa(i)
	tx := item.Transaction{
		PK:         "202405011000",
		SK:         "2024-05-01T10:00:00." + strings.Repeat("0", 16-len(n16)) + n16,
		ID:         "tx-" + n16,
		AgencyID:   "agency-1",
		Kind:       kind,
		Currency:   cur,
		Amount:     amount,
		BPS:        bps,
		HasBPS:     true,
		RecordedAt: encPeriodStart.Add(time.Duration(i) * time.Millisecond),
	}
	if i%4 != 0 {
		tx.CustomerID = "cust-" + strconv.Itoa(i%1000)
	}
	if i%5 != 0 {
		tx.ProductID = "prod-" + strconv.Itoa(i%37)
	}
	return LineItem{Tx: tx, BPS: bps, Commission: sign * money.Commission(amount, int64(bps))}
}

func encWriteLineItems(t testing.TB, w io.Writer, n int) *LineItemWriter {
	t.Helper()
	lw := NewLineItemWriter(w)
	for i := range n {
		if err := lw.Write(encLineItem(i, n)); err != nil {
			t.Fatalf("Write row %d: %v", i, err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return lw
}

func encOpenParquet(t *testing.T, b []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("open parquet: %v", err)
	}
	return f
}

func encSummaryParquet(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSummaryParquet(&b, encSummaryRows()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestParquetDeterministic: the same rows give the same bytes, run after
// run and on any machine (the golden files pin the bytes).
func TestParquetDeterministic(t *testing.T) {
	first, second := encSummaryParquet(t), encSummaryParquet(t)
	if !bytes.Equal(first, second) {
		t.Fatal("two writes of the same summary rows differ")
	}
	encGolden(t, "summary.parquet", first)

	var l1, l2 bytes.Buffer
	encWriteLineItems(t, &l1, 30)
	encWriteLineItems(t, &l2, 30)
	if !bytes.Equal(l1.Bytes(), l2.Bytes()) {
		t.Fatal("two writes of the same line items differ")
	}
	encGolden(t, "transactions.parquet", l1.Bytes())

	if got := encOpenParquet(t, first).Metadata().CreatedBy; got != parquetCreatedBy {
		t.Errorf("created_by = %q, want %q", got, parquetCreatedBy)
	}
}

func TestSummaryParquetReadBack(t *testing.T) {
	b := encSummaryParquet(t)
	f := encOpenParquet(t, b)
	if got := f.Schema().String(); got != encSummarySchema {
		t.Errorf("schema:\n%s\nwant:\n%s", got, encSummarySchema)
	}
	for _, c := range f.Metadata().RowGroups[0].Columns {
		if c.MetaData.Codec.String() != "ZSTD" {
			t.Errorf("column %v codec %v, want ZSTD", c.MetaData.PathInSchema, c.MetaData.Codec)
		}
	}
	got, err := parquet.Read[summaryRecord](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	end := encPeriodStart.Add(time.Hour)
	// Amounts are unscaled DECIMAL(18,4): 1.500 BHD is 15000.
	want := []summaryRecord{
		{encPeriodStart, end, "agency-1", "BHD", 1, 1, 15000, 20000, -5000, -500},
		{encPeriodStart, end, "agency-1", "JPY", 2, 0, 15000000, 0, 15000000, 1500000},
		{encPeriodStart, end, "agency-1", "USD", 3, 1, 599700, 199900, 399800, 40000},
		{encPeriodStart, end, `=HYPERLINK("http://x","y")`, "USD", 1, 0, 999_999_999_999_999_900, 0, 999_999_999_999_999_900, 500},
		{encPeriodStart, end, "-2+3", "USD", 0, 1, 0, 50000, -50000, -5000},
	}
	if len(got) != len(want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		g := got[i]
		g.PeriodStart, g.PeriodEnd = g.PeriodStart.UTC(), g.PeriodEnd.UTC()
		if g != want[i] {
			t.Errorf("row %d = %+v\nwant %+v", i, g, want[i])
		}
	}
}

func TestLineItemParquetReadBack(t *testing.T) {
	const n = 30
	var b bytes.Buffer
	lw := encWriteLineItems(t, &b, n)
	if lw.Rows() != n {
		t.Errorf("Rows() = %d, want %d", lw.Rows(), n)
	}
	f := encOpenParquet(t, b.Bytes())
	if got := f.Schema().String(); got != encLineItemSchema {
		t.Errorf("schema:\n%s\nwant:\n%s", got, encLineItemSchema)
	}
	got, err := parquet.Read[lineItemRecord](bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("read %d rows, want %d", len(got), n)
	}
	// Row 9: BHD refund of 0.001 x 71272 minor = 71.272 BHD at 1009 bps.
	want9 := lineItemRecord{
		TransactionID: "tx-9", AgencyID: "agency-1", CustomerID: "cust-9", ProductID: "prod-9",
		Kind: "refund", Currency: "BHD", Amount: 712720, Commission: -71910, BPS: 1009,
		RecordedAt:   encPeriodStart.Add(9 * time.Millisecond),
		PartitionKey: "202405011000", SortKey: "2024-05-01T10:00:00.0000000000000009",
	}
	g := got[9]
	g.RecordedAt = g.RecordedAt.UTC()
	if g != want9 {
		t.Errorf("row 9 = %+v\nwant %+v", g, want9)
	}
	if got[10].Currency != "JPY" || got[10].Amount != 791_910_000 {
		t.Errorf("row 10 = %s %d, want JPY 79191 (unscaled 791910000)", got[10].Currency, got[10].Amount)
	}

	// An absent customer_id / product_id is NULL, not "".
	rows := make([]parquet.Row, n)
	rr := f.RowGroups()[0].Rows()
	defer rr.Close()
	if k, err := rr.ReadRows(rows); k != n || (err != nil && err != io.EOF) {
		t.Fatalf("ReadRows = %d, %v", k, err)
	}
	for i, r := range rows {
		if isNull := r[2].IsNull(); isNull != (i%4 == 0) {
			t.Errorf("row %d customer_id null = %v, want %v", i, isNull, i%4 == 0)
		}
		if isNull := r[3].IsNull(); isNull != (i%5 == 0) {
			t.Errorf("row %d product_id null = %v, want %v", i, isNull, i%5 == 0)
		}
	}
}

func TestLineItemWriterRowGroups(t *testing.T) {
	const n = 2*lineItemRowGroupRows + 1000
	var b bytes.Buffer
	lw := encWriteLineItems(t, &b, n)
	f := encOpenParquet(t, b.Bytes())
	if f.NumRows() != n || lw.Rows() != n {
		t.Errorf("file rows %d, Rows() %d, want %d", f.NumRows(), lw.Rows(), n)
	}
	var sizes []int64
	for _, rg := range f.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	if len(sizes) != 3 || sizes[0] != lineItemRowGroupRows || sizes[2] != 1000 {
		t.Errorf("row group sizes %v, want [%d %d 1000]", sizes, lineItemRowGroupRows, lineItemRowGroupRows)
	}
}

func TestParquetAmountOverflow(t *testing.T) {
	rows := encSummaryRows()
	rows[1].Refunds = 1e15 // JPY: x10^4 does not fit 18 digits
	err := WriteSummaryParquet(io.Discard, rows)
	if !errors.Is(err, money.ErrOverflow) {
		t.Fatalf("err = %v, want money.ErrOverflow", err)
	}
	for _, s := range []string{`"agency-1"`, "JPY", "refund_amount"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}

	lw := NewLineItemWriter(io.Discard)
	if err := lw.Write(encLineItem(0, 3)); err != nil {
		t.Fatal(err)
	}
	big := encLineItem(1, 3)
	big.Commission = -1e15
	err = lw.Write(big)
	if !errors.Is(err, money.ErrOverflow) {
		t.Fatalf("err = %v, want money.ErrOverflow", err)
	}
	for _, s := range []string{`"tx-1"`, `"agency-1"`, "JPY", "commission_amount"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if lw.Rows() != 1 {
		t.Errorf("Rows() = %d after a refused row, want 1", lw.Rows())
	}
	if err2 := lw.Write(encLineItem(2, 3)); err2 != err {
		t.Errorf("Write after error = %v, want the sticky %v", err2, err)
	}
	if err2 := lw.Close(); err2 != err {
		t.Errorf("Close after error = %v, want the sticky %v", err2, err)
	}
}

func TestLineItemWriterOrder(t *testing.T) {
	lw := NewLineItemWriter(io.Discard)
	for _, i := range []int{0, 1, 1} { // an equal key is allowed
		if err := lw.Write(encLineItem(i, 30)); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := lw.Write(encLineItem(0, 30)); err == nil || !strings.Contains(err.Error(), `"tx-0"`) {
		t.Errorf("out-of-order sort key: err = %v, want an error naming tx-0", err)
	}

	lw = NewLineItemWriter(io.Discard)
	if err := lw.Write(encLineItem(29, 30)); err != nil { // USD
		t.Fatal(err)
	}
	if err := lw.Write(encLineItem(10, 30)); err == nil { // JPY, sort key after
		t.Error("JPY after USD: no error")
	}
}

func TestLineItemWriterUseAfterClose(t *testing.T) {
	lw := NewLineItemWriter(io.Discard)
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lw.Write(encLineItem(0, 3)); err == nil {
		t.Error("Write after Close: no error")
	}
}

func encWriteFile(t *testing.T, name string, write func(io.Writer)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	var b bytes.Buffer
	write(&b)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSummaryParquetDuckDB reads summary.parquet with DuckDB, a reader
// independent of parquet-go.
func TestSummaryParquetDuckDB(t *testing.T) {
	path := encWriteFile(t, "summary.parquet", func(w io.Writer) {
		if err := WriteSummaryParquet(w, encSummaryRows()); err != nil {
			t.Fatal(err)
		}
	})
	types := duckdb.Describe(t, path)
	want := map[string]string{
		"period_start": "TIMESTAMP WITH TIME ZONE", "period_end": "TIMESTAMP WITH TIME ZONE",
		"agency_id": "VARCHAR", "currency": "VARCHAR",
		"purchase_count": "BIGINT", "refund_count": "BIGINT",
		"gross_amount": "DECIMAL(18,4)", "refund_amount": "DECIMAL(18,4)",
		"net_amount": "DECIMAL(18,4)", "commission_amount": "DECIMAL(18,4)",
	}
	encCompareMaps(t, "column types", types, want)

	rows := duckdb.Query(t, "SELECT * FROM read_parquet("+duckdb.Literal(path)+")")
	if len(rows) != 5 {
		t.Fatalf("got %d rows, want 5", len(rows))
	}
	encCompareMaps(t, "row 0", rows[0], map[string]string{
		"period_start": "2024-05-01 10:00:00+00", "period_end": "2024-05-01 11:00:00+00",
		"agency_id": "agency-1", "currency": "BHD", "purchase_count": "1", "refund_count": "1",
		"gross_amount": "1.5000", "refund_amount": "2.0000", "net_amount": "-0.5000", "commission_amount": "-0.0500",
	})
	if got := rows[3]["gross_amount"]; got != "99999999999999.9900" {
		t.Errorf("row 3 gross_amount = %s, want 99999999999999.9900", got)
	}

	sums := duckdb.Query(t, `SELECT SUM(gross_amount) AS gross, SUM(net_amount) AS net,
		SUM(commission_amount) AS commission, SUM(purchase_count) AS purchases
		FROM read_parquet(`+duckdb.Literal(path)+`) WHERE agency_id = 'agency-1'`)
	encCompareMaps(t, "sums", sums[0], map[string]string{
		"gross": "1561.4700", "net": "1539.4800", "commission": "153.9500", "purchases": "6",
	})
}

// TestLineItemParquetDuckDB reads a transactions.parquet of several row
// groups with DuckDB and checks its types, NULLs and exact sums.
func TestLineItemParquetDuckDB(t *testing.T) {
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)") // before the slow part
	const n = 2*lineItemRowGroupRows + 1000
	path := encWriteFile(t, "transactions.parquet", func(w io.Writer) { encWriteLineItems(t, w, n) })
	types := duckdb.Describe(t, path)
	encCompareMaps(t, "column types", types, map[string]string{
		"transaction_id": "VARCHAR", "agency_id": "VARCHAR", "customer_id": "VARCHAR", "product_id": "VARCHAR",
		"kind": "VARCHAR", "currency": "VARCHAR", "amount": "DECIMAL(18,4)", "commission_amount": "DECIMAL(18,4)",
		"commission_bps": "INTEGER", "recorded_at": "TIMESTAMP WITH TIME ZONE",
		"partition_key": "VARCHAR", "sort_key": "VARCHAR",
	})

	// The expected values, computed here in integers.
	type sums struct{ rows, customers, products, amount, commission, bps int64 }
	want := map[string]*sums{}
	for i := range n {
		li := encLineItem(i, n)
		s := want[li.Tx.Currency.Code]
		if s == nil {
			s = &sums{}
			want[li.Tx.Currency.Code] = s
		}
		a, _ := li.Tx.Currency.Scale4(li.Tx.Amount)
		c, _ := li.Tx.Currency.Scale4(li.Commission)
		s.rows++
		s.amount += a
		s.commission += c
		s.bps += int64(li.BPS)
		if li.Tx.CustomerID != "" {
			s.customers++
		}
		if li.Tx.ProductID != "" {
			s.products++
		}
	}
	dec4 := money.Currency{Digits: 4}
	rows := duckdb.Query(t, `SELECT currency, COUNT(*) AS n, COUNT(customer_id) AS customers,
		COUNT(product_id) AS products, SUM(amount) AS amount, SUM(commission_amount) AS commission,
		SUM(commission_bps)::BIGINT AS bps, COUNT(*) FILTER (WHERE customer_id = '') AS empty_customers
		FROM read_parquet(`+duckdb.Literal(path)+`) GROUP BY currency ORDER BY currency`)
	if len(rows) != 3 {
		t.Fatalf("got %d currencies, want 3: %v", len(rows), rows)
	}
	for _, r := range rows {
		s := want[r["currency"]]
		if s == nil {
			t.Fatalf("unexpected currency %q", r["currency"])
		}
		encCompareMaps(t, r["currency"], r, map[string]string{
			"currency": r["currency"], "n": strconv.FormatInt(s.rows, 10),
			"customers": strconv.FormatInt(s.customers, 10), "products": strconv.FormatInt(s.products, 10),
			"amount": dec4.Format(s.amount), "commission": dec4.Format(s.commission),
			"bps": strconv.FormatInt(s.bps, 10), "empty_customers": "0",
		})
	}

	first := duckdb.Query(t, `SELECT transaction_id, recorded_at, kind, sort_key FROM read_parquet(`+
		duckdb.Literal(path)+`) WHERE transaction_id IN ('tx-0', 'tx-131081') ORDER BY recorded_at`)
	if len(first) != 2 {
		t.Fatalf("got %v", first)
	}
	encCompareMaps(t, "tx-0", first[0], map[string]string{
		"transaction_id": "tx-0", "recorded_at": "2024-05-01 10:00:00+00", "kind": "purchase",
		"sort_key": "2024-05-01T10:00:00.0000000000000000",
	})
	if got := first[1]["recorded_at"]; got != "2024-05-01 10:02:11.081+00" {
		t.Errorf("tx-131081 recorded_at = %s, want 2024-05-01 10:02:11.081+00", got)
	}
}

func encCompareMaps(t *testing.T, what string, got, want map[string]string) {
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

// BenchmarkLineItemWriter writes 1,000,000 line items per iteration and
// reports rows/s, the file's bytes, and the largest live heap (after a
// GC, outside the timer) seen just before each row group flush.
func BenchmarkLineItemWriter(b *testing.B) {
	const n = 1_000_000
	var peak uint64
	var size int64
	var ms runtime.MemStats
	b.ReportAllocs()
	for b.Loop() {
		cw := &encCountingWriter{}
		lw := NewLineItemWriter(cw)
		for i := range n {
			if err := lw.Write(encLineItem(i, n)); err != nil {
				b.Fatal(err)
			}
			if i%lineItemRowGroupRows == lineItemRowGroupRows-1 {
				b.StopTimer()
				runtime.GC() // live heap, not garbage awaiting collection
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				b.StartTimer()
			}
		}
		if err := lw.Close(); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size), "file-bytes")
	b.ReportMetric(float64(peak)/(1<<20), "live-heap-MiB")
}

type encCountingWriter struct{ n int64 }

func (w *encCountingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

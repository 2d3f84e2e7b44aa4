package encode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/reportjob/reportjob/internal/duckdb"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// The tests in this file read the files with DuckDB, a reader independent
// of parquet-go (see package duckdb: skipped without it, failed under CI).

var summaryTypes = map[string]string{
	"period_start": "TIMESTAMP WITH TIME ZONE", "period_end": "TIMESTAMP WITH TIME ZONE",
	"agency_id": "VARCHAR", "currency": "VARCHAR",
	"purchase_count": "BIGINT", "refund_count": "BIGINT",
	"gross_amount": "DECIMAL(38,4)", "refund_amount": "DECIMAL(38,4)",
	"net_amount": "DECIMAL(38,4)", "commission_amount": "DECIMAL(38,4)",
}

func TestSummaryParquetDuckDB(t *testing.T) {
	path := writeTemp(t, "summary.parquet", summaryParquet(t))
	compareMaps(t, "column types", duckdb.Describe(t, path), summaryTypes)

	rows := duckdb.Query(t, "SELECT * FROM read_parquet("+duckdb.Literal(path)+")")
	if len(rows) != 7 {
		t.Fatalf("got %d rows, want 7", len(rows))
	}
	compareMaps(t, "row 2", rows[2], map[string]string{
		"period_start": "2024-05-01 10:00:00+00", "period_end": "2024-05-01 11:00:00+00",
		"agency_id": "agency-1", "currency": "BHD", "purchase_count": "1", "refund_count": "1",
		"gross_amount": "1.5000", "refund_amount": "2.0000", "net_amount": "-0.5000", "commission_amount": "-0.0500",
	})
	// Totals past 10^18 (and 2^64) minor units, both signs, exact.
	compareMaps(t, "row 6", rows[6], map[string]string{
		"period_start": "2024-05-01 10:00:00+00", "period_end": "2024-05-01 11:00:00+00",
		"agency_id": "big", "currency": "USD", "purchase_count": "1000000", "refund_count": "2000000",
		"gross_amount": bigAmount + "00", "refund_amount": bigRefunds + "00",
		"net_amount": bigNet + "00", "commission_amount": bigCommission + "00",
	})
	for i, want := range []struct{ agency, gross string }{
		{"-2+3", "0.0000"}, {hyperlinkAgency, "99999999999999.9900"}, {"agency-1", "1.5000"},
		{"agency-1", "1.2345"}, {"agency-1", "1500.0000"}, {"agency-1", "59.9700"},
	} {
		if rows[i]["agency_id"] != want.agency || rows[i]["gross_amount"] != want.gross {
			t.Errorf("row %d = %s %s, want %s %s", i, rows[i]["agency_id"], rows[i]["gross_amount"], want.agency, want.gross)
		}
	}

	// DuckDB sums the DECIMAL(38,4) columns exactly.
	sums := duckdb.Query(t, `SELECT SUM(gross_amount)::VARCHAR AS gross, SUM(net_amount)::VARCHAR AS net,
		SUM(purchase_count) AS purchases FROM read_parquet(`+duckdb.Literal(path)+`) WHERE currency = 'USD'`)
	compareMaps(t, "USD sums", sums[0], map[string]string{
		// 0 + 99999999999999.99 + 59.97 + 123456789012345678901.23
		"gross": "123456889012345678961.1900",
		// -5.00 + 99999999999999.99 + 39.98 - 864197532086419753208.64
		"net":       "-864197432086419753173.6700",
		"purchases": "1000004",
	})
}

func TestAdjustmentsParquetDuckDB(t *testing.T) {
	path := writeTemp(t, "adjustments.parquet", adjustmentsParquet(t))
	want := map[string]string{"revision": "INTEGER"}
	for k, v := range summaryTypes {
		want[k] = v
	}
	compareMaps(t, "column types", duckdb.Describe(t, path), want)

	rows := duckdb.Query(t, "SELECT * FROM read_parquet("+duckdb.Literal(path)+")")
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4", len(rows))
	}
	compareMaps(t, "row 0", rows[0], map[string]string{
		"period_start": "2024-05-01 10:00:00+00", "period_end": "2024-05-01 11:00:00+00",
		"agency_id": "+agency", "currency": "JPY", "purchase_count": "-1", "refund_count": "0",
		"gross_amount": "-1500.0000", "refund_amount": "0.0000", "net_amount": "-1500.0000",
		"commission_amount": "-150.0000", "revision": "3",
	})
	if got := rows[3]["commission_amount"]; got != "12345678901234567890.1200" {
		t.Errorf("row 3 commission_amount = %s, want 12345678901234567890.1200", got)
	}
}

// TestLineItemParquetDuckDB reads a transactions file of two agencies and
// several row groups with DuckDB and checks its types, NULLs, order and
// exact sums, in every layout: an agency's file and the period's (its
// pages are 1 MiB in layout 2).
func TestLineItemParquetDuckDB(t *testing.T) {
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)") // before the slow part
	const n = 2*lineItemRowGroupRows + 1000
	rows := genLineItems(n)
	for _, l := range allLayouts {
		for _, dataset := range []bool{false, true} {
			t.Run(fmt.Sprintf("layout %d dataset %v", l, dataset), func(t *testing.T) {
				path := writeTemp(t, "transactions.parquet", writeLineItemsLayout(t, l, dataset, rows))
				checkLineItemParquetDuckDB(t, path, rows)
			})
		}
	}
}

func checkLineItemParquetDuckDB(t *testing.T, path string, rows []report.LineItem) {
	compareMaps(t, "column types", duckdb.Describe(t, path), map[string]string{
		"transaction_id": "VARCHAR", "agency_id": "VARCHAR", "customer_id": "VARCHAR", "product_id": "VARCHAR",
		"kind": "VARCHAR", "currency": "VARCHAR", "amount": "DECIMAL(18,4)", "commission_amount": "DECIMAL(18,4)",
		"commission_bps": "INTEGER", "recorded_at": "TIMESTAMP WITH TIME ZONE",
		"partition_key": "VARCHAR", "sort_key": "VARCHAR",
	})

	// The expected values, computed here in integers.
	type sums struct{ rows, customers, products, amount, commission, bps int64 }
	want := map[string]*sums{}
	for _, li := range rows {
		k := li.Tx.AgencyID + " " + li.Tx.Currency.Code
		s := want[k]
		if s == nil {
			s = &sums{}
			want[k] = s
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
	got := duckdb.Query(t, `SELECT agency_id || ' ' || currency AS k, COUNT(*) AS n, COUNT(customer_id) AS customers,
		COUNT(product_id) AS products, SUM(amount) AS amount, SUM(commission_amount) AS commission,
		SUM(commission_bps)::BIGINT AS bps, COUNT(*) FILTER (WHERE customer_id = '') AS empty_customers
		FROM read_parquet(`+duckdb.Literal(path)+`) GROUP BY ALL ORDER BY k`)
	if len(got) != 6 {
		t.Fatalf("got %d (agency, currency) groups, want 6: %v", len(got), got)
	}
	for _, r := range got {
		s := want[r["k"]]
		if s == nil {
			t.Fatalf("unexpected group %q", r["k"])
		}
		compareMaps(t, r["k"], r, map[string]string{
			"k": r["k"], "n": strconv.FormatInt(s.rows, 10),
			"customers": strconv.FormatInt(s.customers, 10), "products": strconv.FormatInt(s.products, 10),
			"amount": dec4.Format(s.amount), "commission": dec4.Format(s.commission),
			"bps": strconv.FormatInt(s.bps, 10), "empty_customers": "0",
		})
	}

	// The file is in (agency, currency, sort key) order, across row
	// groups: no row sorts before the one read before it.
	order := duckdb.Query(t, `SELECT COUNT(*) AS out_of_order FROM (
		SELECT agency_id, currency, sort_key,
			LAG(agency_id) OVER w AS pa, LAG(currency) OVER w AS pc, LAG(sort_key) OVER w AS ps
		FROM (SELECT *, file_row_number FROM read_parquet(`+duckdb.Literal(path)+`, file_row_number = true))
		WINDOW w AS (ORDER BY file_row_number))
		WHERE pa IS NOT NULL AND (agency_id, currency, sort_key) < (pa, pc, ps)`)
	if got := order[0]["out_of_order"]; got != "0" {
		t.Errorf("%s rows out of order", got)
	}

	first := duckdb.Query(t, `SELECT transaction_id, recorded_at, kind, sort_key, agency_id FROM read_parquet(`+
		duckdb.Literal(path)+`) WHERE transaction_id IN ('tx-0', 'tx-131081') ORDER BY recorded_at`)
	if len(first) != 2 {
		t.Fatalf("got %v", first)
	}
	compareMaps(t, "tx-0", first[0], map[string]string{
		"transaction_id": "tx-0", "recorded_at": "2024-05-01 10:00:00+00", "kind": "purchase",
		"sort_key": "2024-05-01T10:00:00.0000000000000000", "agency_id": "agency-1",
	})
	if got := first[1]["recorded_at"]; got != "2024-05-01 10:02:11.081+00" || first[1]["agency_id"] != "agency-2" {
		t.Errorf("tx-131081 = %v, want recorded_at 2024-05-01 10:02:11.081+00 of agency-2", first[1])
	}
}

// TestCSVDuckDB: DuckDB's CSV reader finds the same cells (CRLF,
// quoting, neutralised text) and exact amounts.
func TestCSVDuckDB(t *testing.T) {
	path := writeTemp(t, "transactions.csv", lineItemsCSV(t, lineItems()))
	rows := duckdb.Query(t, `SELECT transaction_id, customer_id, product_id, partition_key,
		CAST(amount AS DECIMAL(18,4))::VARCHAR AS amount FROM read_csv(`+duckdb.Literal(path)+
		`, header = true, all_varchar = true, quote = '"', escape = '"')`)
	if len(rows) != 8 {
		t.Fatalf("got %d rows, want 8: %v", len(rows), rows)
	}
	compareMaps(t, "row 0", rows[0], map[string]string{
		"transaction_id": "'=1+1", "customer_id": "'@cust", "product_id": "'-prod",
		"partition_key": "202405011000", "amount": "1500.0000",
	})
	compareMaps(t, "row 5", rows[5], map[string]string{
		"transaction_id": "tx-6", "customer_id": "a,b", "product_id": `say "hi"`,
		"partition_key": "202405011000", "amount": "5.0000",
	})
	if got := rows[6]["customer_id"]; got != "line\nbreak" && got != "line\r\nbreak" {
		t.Errorf("row 6 customer_id = %q, want the line break kept", got)
	}
}

// TestWriterHiveDuckDB lays a Writer's objects out under their keys and
// queries each dataset as a hive-partitioned table, as Athena or DuckDB
// users would: one table per dataset prefix, agencies found by folder.
func TestWriterHiveDuckDB(t *testing.T) {
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)")
	root := t.TempDir()
	var c collector
	w := NewWriter(t.TempDir(), testPeriod, Formats{CSV: true, Parquet: true}, report.LatestParquetLayout, c.out)
	defer w.Close()
	if err := writePeriod(w, writerSummary(), writerAdjustments(), writerLines(), ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.files {
		dst := filepath.Join(root, filepath.FromSlash(f.Key))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.Path, dst); err != nil {
			t.Fatal(err)
		}
	}
	glob := func(pattern string) string {
		return duckdb.Literal(filepath.Join(root, filepath.FromSlash(pattern)))
	}
	rows := duckdb.Query(t, `SELECT period, COUNT(*) AS n, COUNT(DISTINCT agency_id) AS agencies
		FROM read_parquet(`+glob("summary/*/*.parquet")+`, hive_partitioning = true) GROUP BY ALL`)
	if len(rows) != 1 {
		t.Fatalf("summary: %v", rows)
	}
	compareMaps(t, "summary", rows[0], map[string]string{"period": periodName, "n": "6", "agencies": "5"})

	// Each agency's folder holds its own rows only; the folder name is the
	// escaped id (the keys are checked byte for byte in TestWriterFiles).
	rows = duckdb.Query(t, `SELECT agency AS folder, agency_id, COUNT(*) AS n
		FROM read_parquet(`+glob("agencies/*/*/transactions-*.parquet")+`, hive_partitioning = true,
			hive_types = {'agency': VARCHAR, 'period': VARCHAR})
		GROUP BY ALL ORDER BY agency_id`)
	if len(rows) != len(writerAgencies) {
		t.Fatalf("agencies: %v", rows)
	}
	for i, a := range writerAgencies {
		// DuckDB URL-decodes a partition value: agency=ag%C3%A9nce gives
		// back "agénce", the id in the rows.
		compareMaps(t, a.escaped, rows[i], map[string]string{"folder": a.id, "agency_id": a.id, "n": strconv.Itoa(i + 1)})
	}
}

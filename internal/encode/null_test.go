package encode

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/duckdb"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// nullCases are line items whose customer_id and product_id are absent
// or present in several orders; "issue" is the one reported: a file of
// [absent, c-77, absent] gave the third row "" instead of NULL.
var nullCases = []struct {
	name string
	ids  [][2]string // customer, product
}{
	{"issue", [][2]string{{"", "p"}, {"c-77", "p"}, {"", "p"}}},
	{"product", [][2]string{{"c", ""}, {"c", "p-77"}, {"c", ""}}},
	{"mixed", [][2]string{{"", ""}, {"c-77", ""}, {"", "p-1"}, {"", ""}, {"c-78", "p-2"}, {"", ""}}},
}

// nullRows returns a case's line items, in file order, of one agency.
func nullRows(ids [][2]string) []report.LineItem {
	rows := make([]report.LineItem, len(ids))
	for i, id := range ids {
		rows[i] = genLineItem(0, 6)
		tx := &rows[i].Tx
		tx.ID = fmt.Sprintf("tx-%d", i)
		tx.SK = fmt.Sprintf("2024-05-01T10:00:0%d.AAAAAAAAAAAAAAAA", i)
		tx.CustomerID, tx.ProductID = id[0], id[1]
	}
	return rows
}

// nullFiles writes rows through a Writer of layout l with agency CSV and
// Parquet files and returns the handed-out files by name: "transactions.parquet"
// (the dataset), "agency.parquet" and "agency.csv".
func nullFiles(t *testing.T, l report.ParquetLayout, rows []report.LineItem) map[string]File {
	t.Helper()
	var c collector
	w := NewWriter(t.TempDir(), testPeriod, Formats{CSV: true, Parquet: true}, l, c.out)
	t.Cleanup(func() { w.Close() })
	if err := writePeriod(w, nil, nil, rows, ""); err != nil {
		t.Fatal(err)
	}
	out := map[string]File{}
	for _, f := range c.files {
		_, agency := report.AgencySegment(f.Key)
		switch {
		case strings.HasPrefix(f.Key, report.DatasetTransactions+"/"):
			out["transactions.parquet"] = f
		case agency && strings.Contains(f.Key, "/transactions-") && strings.HasSuffix(f.Key, ".parquet"):
			out["agency.parquet"] = f
		case agency && strings.Contains(f.Key, "/transactions-") && strings.HasSuffix(f.Key, ".csv"):
			out["agency.csv"] = f
		}
	}
	if len(out) != 3 {
		t.Fatalf("files %v", out)
	}
	return out
}

// want renders a case's column as nullColumn reads it.
func wantColumn(ids [][2]string, col int) string {
	var out []string
	for _, id := range ids {
		if id[col] == "" {
			out = append(out, "NULL")
		} else {
			out = append(out, id[col])
		}
	}
	return strings.Join(out, " ")
}

// nullColumns reads column name of a line-item file with parquet-go's
// column reader: each value, or "NULL" for a null.
func nullColumn(t *testing.T, b []byte, name string) []string {
	t.Helper()
	f := openParquet(t, b)
	col, ok := f.Schema().Lookup(name)
	if !ok {
		t.Fatalf("no column %s", name)
	}
	var out []string
	for _, rg := range f.RowGroups() {
		pages := rg.ColumnChunks()[col.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]parquet.Value, p.NumValues())
			n, err := p.Values().ReadValues(vals)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			for _, v := range vals[:n] {
				if v.IsNull() {
					out = append(out, "NULL")
				} else {
					out = append(out, v.String())
				}
			}
		}
		pages.Close()
	}
	return out
}

// TestLineItemNulls: an absent customer_id or product_id is NULL in the
// transactions Parquet and in the agency's, in every layout, whatever the
// rows around it, as parquet-go reads the columns; in the agency's CSV it
// is an empty cell.
func TestLineItemNulls(t *testing.T) {
	for _, tc := range nullCases {
		for _, l := range allLayouts {
			t.Run(fmt.Sprintf("%s layout %d", tc.name, l), func(t *testing.T) {
				files := nullFiles(t, l, nullRows(tc.ids))
				for _, name := range []string{"transactions.parquet", "agency.parquet"} {
					b, err := os.ReadFile(files[name].Path)
					if err != nil {
						t.Fatal(err)
					}
					for i, col := range []string{"customer_id", "product_id"} {
						if got, want := strings.Join(nullColumn(t, b, col), " "), wantColumn(tc.ids, i); got != want {
							t.Errorf("%s %s = %s, want %s", name, col, got, want)
						}
					}
				}
				f, err := os.Open(files["agency.csv"].Path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				recs, err := csv.NewReader(f).ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				for i, id := range tc.ids {
					if got := recs[i+1][2:4]; got[0] != id[0] || got[1] != id[1] {
						t.Errorf("agency.csv row %d customer_id, product_id = %q, want %q", i, got, id)
					}
				}
			})
		}
	}
}

// TestLineItemNullsDuckDB: DuckDB finds every absent id with IS NULL, in
// the dataset file and the agency's, in every layout, and no empty string.
func TestLineItemNullsDuckDB(t *testing.T) {
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)")
	for _, tc := range nullCases {
		var customers, products int
		for _, id := range tc.ids {
			if id[0] == "" {
				customers++
			}
			if id[1] == "" {
				products++
			}
		}
		for _, l := range allLayouts {
			t.Run(fmt.Sprintf("%s layout %d", tc.name, l), func(t *testing.T) {
				files := nullFiles(t, l, nullRows(tc.ids))
				for _, name := range []string{"transactions.parquet", "agency.parquet"} {
					got := duckdb.Query(t, `SELECT COUNT(*) FILTER (WHERE customer_id IS NULL) AS no_customer,
						COUNT(*) FILTER (WHERE product_id IS NULL) AS no_product,
						COUNT(*) FILTER (WHERE customer_id = '' OR product_id = '') AS empty
						FROM read_parquet(`+duckdb.Literal(files[name].Path)+`)`)
					compareMaps(t, name, got[0], map[string]string{
						"no_customer": strconv.Itoa(customers), "no_product": strconv.Itoa(products), "empty": "0",
					})
				}
			})
		}
	}
}

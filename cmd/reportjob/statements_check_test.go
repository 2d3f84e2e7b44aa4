package main

import (
	"encoding/csv"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/duckdb"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// What must hold of the statements in a sink between commands (issue 16):
// stCheckObjects (every statement object listed by its month manifest, no
// due marker, no intent, drafts built from the latest period revisions)
// and stCheckTotals (the invariant to the minor unit, by DuckDB, and the
// agency CSVs against the statements Parquet).

// stIsMonthKey reports whether key belongs to the statements: under
// statements/, manifests/month=M/, manifests/due/ or agencies/A/month=M/.
func stIsMonthKey(key string) bool { return report.IsStatementKey(key) }

// stCheckObjects checks the statement objects of objs (key -> sha256)
// after a completed command (statementProblems: every statement object
// listed by its month manifest, no due marker, no intent, drafts built
// from the latest period revisions) and returns the month manifests by
// month.
func stCheckObjects(t testing.TB, h *harness, objs map[string]string) map[string]*monthclose.Manifest {
	t.Helper()
	sk := h.sink()
	months := readStatements(t, objs, func(key string) []byte { return h.read(sk, key) })
	for _, p := range statementProblems(objs, months, true) {
		t.Error(p)
	}
	mans := map[string]*monthclose.Manifest{}
	for _, ms := range months {
		mans[ms.manifest.Month] = ms.manifest
	}
	return mans
}

// agencyRevision is the statement revision agency's files carry in man:
// the revision its statement last changed in (man's own when man lists no
// agencies, as before issue 19).
func agencyRevision(man *monthclose.Manifest, agency string) int {
	for _, e := range man.Agencies {
		if e.AgencyID == agency {
			return e.Revision
		}
	}
	return man.StatementRevision
}

var stMonthDir = regexp.MustCompile(`month=(\d{4}-\d{2})`)

// stCheckTotals checks, to the minor unit, with DuckDB reading the files:
//   - per currency, the sum over all months of commission_due equals the
//     sum of commission_amount over the latest revision of every period
//     (summary/);
//   - per month, agency and currency: its own commission plus the
//     adjustments booked (in any later month) for its periods equals its
//     periods' summaries (by the zone's month bounds); a month none of
//     whose periods was adjusted has the summaries' net amount too;
//   - prior_period_adjustments is the sum of the adjustment rows booked in
//     the month, and commission_due = commission + adjustments;
//   - each agency CSV's total rows are the statements Parquet's rows.
func stCheckTotals(t testing.TB, h *harness, objs map[string]string, mans map[string]*monthclose.Manifest, zone string) {
	t.Helper()
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "reportjob-st-check-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sk := h.sink()
	var csvs []string
	hasAdj, hasSum := false, false
	for k := range objs {
		isSum := strings.HasPrefix(k, "summary/")
		isAdj := strings.HasPrefix(k, report.MonthManifestsPrefix) && strings.Contains(k, "/adjustments-")
		isCSV := strings.HasPrefix(k, report.DirAgencies+"/") && strings.Contains(k, "/month=") && strings.HasSuffix(k, ".csv")
		if !isSum && !isAdj && !isCSV && !strings.HasPrefix(k, report.DatasetStatements+"/") {
			continue
		}
		name := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, h.read(sk, k), 0o644); err != nil {
			t.Fatal(err)
		}
		hasAdj, hasSum = hasAdj || isAdj, hasSum || isSum
		if isCSV {
			csvs = append(csvs, name)
		}
	}
	sort.Strings(csvs)
	v := "AS VARCHAR)"
	sql := "SELECT 'st' AS k, month AS m, status AS s, agency_id AS a, currency AS c, CAST(commission_amount " + v + " AS x, " +
		"CAST(prior_period_adjustments " + v + " AS y, CAST(commission_due " + v + " AS z, CAST(net_amount " + v + " AS n, " +
		"CAST(statement_revision " + v + " AS r FROM read_parquet(" + duckdb.Literal(filepath.Join(dir, "statements", "*", "*.parquet")) + ")"
	if hasSum {
		sql += " UNION ALL SELECT 'sum', CAST(period_start " + v + ", '', agency_id, currency, CAST(commission_amount " + v + ", '', '', " +
			"CAST(net_amount " + v + ", '' FROM read_parquet(" + duckdb.Literal(filepath.Join(dir, "summary", "*", "*.parquet")) + ")"
	}
	if hasAdj {
		sql += " UNION ALL SELECT 'adj', CAST(period_start " + v + ", filename, agency_id, currency, CAST(commission_amount " + v + ", '', '', '', " +
			"CAST(revision " + v + " FROM read_parquet(" + duckdb.Literal(filepath.Join(dir, "manifests", "*", "adjustments-*.parquet")) + ", filename=true)"
	}
	rows := duckdb.Query(t, sql)

	rat := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("DuckDB amount %q", s)
		}
		return r
	}
	type key struct{ month, agency, cur string }
	add := func(m map[key]*big.Rat, k key, s string) {
		if m[k] == nil {
			m[k] = new(big.Rat)
		}
		m[k].Add(m[k], rat(s))
	}
	periodMonth := func(s string) string {
		ts, err := time.Parse("2006-01-02 15:04:05-07", s)
		if err != nil {
			t.Fatalf("DuckDB period_start %q: %v", s, err)
		}
		return ts.In(loc).Format("2006-01")
	}
	own, ownNet, ppa, due := map[key]*big.Rat{}, map[key]*big.Rat{}, map[key]*big.Rat{}, map[key]*big.Rat{}
	sums, sumNet, adjOf, adjIn := map[key]*big.Rat{}, map[key]*big.Rat{}, map[key]*big.Rat{}, map[key]*big.Rat{}
	adjusted := map[string]bool{} // months some of whose periods were adjusted
	stRows := map[key]map[string]string{}
	for _, row := range rows {
		switch row["k"] {
		case "st":
			k := key{row["m"], row["a"], row["c"]}
			if stRows[k] != nil {
				t.Errorf("statements: two rows for %v", k)
			}
			stRows[k] = row
			add(own, k, row["x"])
			add(ownNet, k, row["n"])
			add(ppa, k, row["y"])
			add(due, k, row["z"])
			if sum := new(big.Rat).Add(rat(row["x"]), rat(row["y"])); sum.Cmp(rat(row["z"])) != 0 {
				t.Errorf("statements %v: commission %s + adjustments %s != due %s", k, row["x"], row["y"], row["z"])
			}
			if man := mans[row["m"]]; man == nil || man.Status != row["s"] || row["r"] != itoa(agencyRevision(man, row["a"])) {
				t.Errorf("statements row %v: status %s revision %s disagree with the month manifest", k, row["s"], row["r"])
			}
		case "sum":
			k := key{periodMonth(row["m"]), row["a"], row["c"]}
			add(sums, k, row["x"])
			add(sumNet, k, row["n"])
		case "adj":
			pm := periodMonth(row["m"])
			booked := stMonthDir.FindStringSubmatch(row["s"])
			if booked == nil {
				t.Fatalf("adjustments file %s", row["s"])
			}
			add(adjOf, key{pm, row["a"], row["c"]}, row["x"])
			add(adjIn, key{booked[1], row["a"], row["c"]}, row["x"])
			adjusted[pm] = true
		}
	}
	zero := new(big.Rat)
	get := func(m map[key]*big.Rat, k key) *big.Rat {
		if m[k] == nil {
			return zero
		}
		return m[k]
	}
	keys := map[key]bool{}
	for _, m := range []map[key]*big.Rat{own, sums, adjOf, adjIn} {
		for k := range m {
			keys[k] = true
		}
	}
	perCur := map[string][2]*big.Rat{}
	for k := range keys {
		if mans[k.month] == nil && (get(sums, k).Sign() != 0 || get(adjIn, k).Sign() != 0) {
			t.Errorf("%v: delivered periods or adjustments, and no statement for the month", k)
			continue
		}
		if got, want := new(big.Rat).Add(get(own, k), get(adjOf, k)), get(sums, k); got.Cmp(want) != 0 {
			t.Errorf("%v: own commission %s + later adjustments %s = %s, the periods' summaries %s",
				k, get(own, k).FloatString(4), get(adjOf, k).FloatString(4), got.FloatString(4), want.FloatString(4))
		}
		if !adjusted[k.month] && get(ownNet, k).Cmp(get(sumNet, k)) != 0 {
			t.Errorf("%v: net %s, the periods' summaries %s", k, get(ownNet, k).FloatString(4), get(sumNet, k).FloatString(4))
		}
		if get(ppa, k).Cmp(get(adjIn, k)) != 0 {
			t.Errorf("%v: prior_period_adjustments %s, the adjustment rows booked %s", k, get(ppa, k).FloatString(4), get(adjIn, k).FloatString(4))
		}
		c := perCur[k.cur]
		if c[0] == nil {
			c = [2]*big.Rat{new(big.Rat), new(big.Rat)}
		}
		c[0].Add(c[0], get(due, k))
		c[1].Add(c[1], get(sums, k))
		perCur[k.cur] = c
	}
	for cur, c := range perCur {
		if c[0].Cmp(c[1]) != 0 {
			t.Errorf("invariant: %s: the statements' commission_due adds up to %s, the latest revision of every period to %s",
				cur, c[0].FloatString(4), c[1].FloatString(4))
		}
	}
	// The agency CSVs' total rows are the statements Parquet's rows.
	seen := 0
	for _, name := range csvs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) == 0 {
			t.Fatalf("%s: %v", name, err)
		}
		col := map[string]int{}
		for i, c := range recs[0] {
			col[c] = i
		}
		for _, rec := range recs[1:] {
			if rec[col["line"]] != "total" {
				continue
			}
			k := key{rec[col["month"]], rec[col["agency_id"]], rec[col["currency"]]}
			row := stRows[k]
			if row == nil {
				t.Errorf("%s: total row %v has no statements row", name, k)
				continue
			}
			seen++
			if rec[col["status"]] != row["s"] || rec[col["statement_revision"]] != row["r"] {
				t.Errorf("%s %v: status %s revision %s, the statements Parquet %s %s", name, k,
					rec[col["status"]], rec[col["statement_revision"]], row["s"], row["r"])
			}
			for csvCol, stCol := range map[string]string{"commission_amount": "x", "prior_period_adjustments": "y", "commission_due": "z", "net_amount": "n"} {
				if rat(rec[col[csvCol]]).Cmp(rat(row[stCol])) != 0 {
					t.Errorf("%s %v: %s %s, the statements Parquet %s", name, k, csvCol, rec[col[csvCol]], row[stCol])
				}
			}
		}
	}
	if seen != len(stRows) {
		t.Errorf("the agency CSVs have %d total rows, the statements Parquet %d rows", seen, len(stRows))
	}
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

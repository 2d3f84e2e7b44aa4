package duckdb

import (
	"os"
	"path/filepath"
	"testing"
)

func TestQueryRendersExactValues(t *testing.T) {
	rows := Query(t, `SELECT 7::INTEGER AS i, 9007199254740993::BIGINT AS big,
		CAST('99999999999999.9999' AS DECIMAL(18,4)) AS dec, NULL AS n, 'it''s' AS s,
		TIMESTAMPTZ '2024-05-01 00:00:00+00' AS ts
		UNION ALL SELECT 8, -1, -0.0500, 1, '', TIMESTAMPTZ '2024-05-01 01:00:00+00'
		ORDER BY i`)
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2: %v", len(rows), rows)
	}
	want0 := map[string]string{
		"i": "7", "big": "9007199254740993", "dec": "99999999999999.9999", "s": "it's",
		"ts": "2024-05-01 00:00:00+00",
	}
	for k, v := range want0 {
		if rows[0][k] != v {
			t.Errorf("row 0 %s = %q, want %q", k, rows[0][k], v)
		}
	}
	if v, ok := rows[0]["n"]; ok {
		t.Errorf("row 0 n = %q, want NULL (absent)", v)
	}
	if got := rows[1]["dec"]; got != "-0.0500" {
		t.Errorf("row 1 dec = %q, want -0.0500", got)
	}
	if v, ok := rows[1]["s"]; !ok || v != "" {
		t.Errorf("row 1 s = %q, %v; want empty string, present", v, ok)
	}
}

func TestQueryPathWithQuote(t *testing.T) {
	// Literal must quote a path with a quote in it.
	dir := filepath.Join(t.TempDir(), "it's")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(f, []byte("a,b\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := Query(t, "SELECT a + 1 AS a, b FROM read_csv("+Literal(f)+")")
	if len(rows) != 1 || rows[0]["a"] != "2" || rows[0]["b"] != "x" {
		t.Fatalf("rows = %v", rows)
	}
}

// Package duckdb is a test helper: an independent reader that checks the
// files reportjob writes with DuckDB (npm @duckdb/node-api, run by node),
// not with the library that wrote them.
//
// It needs node on PATH and RJTEST_DUCKDB_NODE_MODULES (testenv.EnvDuckDB)
// naming a node_modules folder holding @duckdb/node-api; without it the
// test is skipped (failed under CI).
package duckdb

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/testenv"
)

//go:embed query.js
var queryScript []byte

// queryTimeout bounds one node run (start-up is about a second).
const queryTimeout = 2 * time.Minute

// Query runs sql in a fresh in-memory DuckDB and returns its rows, each a
// map of column name to value rendered as a string. BIGINT, HUGEINT and
// DECIMAL are exact ("12.3400" for a DECIMAL(18,4)); timestamps are
// DuckDB's text in UTC ("2024-05-01 00:00:00+00" for TIMESTAMPTZ);
// INTEGER, DOUBLE, BOOLEAN, lists and structs are their JSON text. A NULL
// value is absent from its row's map (test it with v, ok := row[col]).
// When several columns share a name, the last one wins: alias them.
// An SQL error fails the test with DuckDB's message.
func Query(t testing.TB, sql string) []map[string]string {
	t.Helper()
	modules := testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("duckdb: %s is set but node is not on PATH: %v", testenv.EnvDuckDB, err)
	}
	script := filepath.Join(t.TempDir(), "query.js")
	if err := os.WriteFile(script, queryScript, 0o600); err != nil {
		t.Fatalf("duckdb: write script: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, modules)
	cmd.Stdin = strings.NewReader(sql)
	// TZ=UTC: the API renders TIMESTAMPTZ in the process's time zone.
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckdb: query failed: %v\nsql: %s\n%s", err, sql, strings.TrimSpace(stderr.String()))
	}
	var out struct {
		Columns []string            `json:"columns"`
		Rows    []map[string]string `json:"rows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("duckdb: decode output: %v\n%s", err, stdout.String())
	}
	return out.Rows
}

// Describe returns the columns of a Parquet file as DuckDB reads them:
// column name -> DuckDB type ("TIMESTAMP WITH TIME ZONE", "DECIMAL(18,4)",
// "VARCHAR", "BIGINT", "INTEGER").
func Describe(t testing.TB, parquetFile string) map[string]string {
	t.Helper()
	rows := Query(t, "DESCRIBE SELECT * FROM read_parquet("+Literal(parquetFile)+")")
	cols := make(map[string]string, len(rows))
	for _, r := range rows {
		cols[r["column_name"]] = r["column_type"]
	}
	return cols
}

// Literal quotes s as an SQL string literal, e.g. a file name for
// read_parquet or read_csv.
func Literal(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

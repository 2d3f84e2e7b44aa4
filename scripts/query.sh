#!/usr/bin/env bash
# Runs SQL over the reports with DuckDB and prints the result as a table:
# no DuckDB command-line tool and no code needed. DuckDB comes from the npm
# registry (@duckdb/node-api), installed into .tools/duckdb on first use.
#   scripts/query.sh "SELECT count(*) FROM read_parquet('reports/summary/*/*.parquet')"
#   scripts/query.sh < query.sql
# Paths in the SQL are relative to the folder you run it from. Needs node and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/versions.sh
. "$root/scripts/versions.sh"
mods=$root/.tools/duckdb
if [ ! -f "$mods/.installed-$DUCKDB_VERSION" ]; then
  command -v npm >/dev/null || { echo "query: npm is required (Node.js)" >&2; exit 1; }
  echo "query: installing @duckdb/node-api@$DUCKDB_VERSION into .tools/duckdb (once)" >&2
  npm install --silent --no-audit --no-fund --prefix "$mods" "@duckdb/node-api@$DUCKDB_VERSION" >&2
  touch "$mods/.installed-$DUCKDB_VERSION"
fi
if [ $# -gt 1 ]; then
  echo "usage: $0 \"SQL\"   (or the SQL on stdin)" >&2
  exit 2
fi
if [ $# -eq 1 ]; then
  printf '%s' "$1" | node "$root/scripts/query.js" "$mods/node_modules"
else
  node "$root/scripts/query.js" "$mods/node_modules"
fi

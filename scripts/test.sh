#!/usr/bin/env bash
# Runs every test: unit tests, the conformance suites against every backend,
# and the end-to-end tests against real servers (DynamoDB Local, versitygw over
# HTTP and HTTPS) and an independent Parquet reader (DuckDB).
#   ./scripts/test.sh                 everything
#   ./scripts/test.sh -run TestE2E    extra arguments go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/tools.sh
run=$(mktemp -d "${TMPDIR:-/tmp}/reportjob-test.XXXXXX")
cleanup() { scripts/servers.sh stop "$run"; rm -rf "$run"; }
trap cleanup EXIT
scripts/servers.sh start "$run"
# shellcheck disable=SC1091
. "$run/env"
go vet ./...
go test -count=1 -timeout 20m "$@" ./...
# The patched fpdf (third_party/fpdf) is a module of its own: ./... leaves
# out its tests of the patch.
if [ $# -eq 0 ]; then (cd third_party/fpdf && go vet . && go test -count=1 .); fi
# Bounded fuzzing of every fuzz target (about a minute); not when the run
# was narrowed with arguments.
if [ $# -eq 0 ]; then scripts/fuzz.sh; fi

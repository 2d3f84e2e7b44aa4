#!/usr/bin/env bash
# Runs the performance harness (cmd/reportbench) against a freshly built
# reportjob binary and DynamoDB Local, prints markdown tables and writes
# bench-results.json. See PERFORMANCE.md.
#   scripts/bench.sh                 small sizes (about 5 minutes on 2 cores)
#   scripts/bench.sh --full          issue 10's sizes: 5M transactions, 1M-item tables (about an hour)
#   scripts/bench.sh -only run       one scenario (run, ingest, ddbingest, growth, concurrency, bigperiod, ddbsplit, monthclose, scaling)
#   scripts/bench.sh -only monthclose            a month of 10,000 agencies closes (--full: 100,000; -sizes N: N)
#   scripts/bench.sh -only run -repeat 3   each job of the run scenario 3 times, the fastest counted
#   scripts/bench.sh -only bigperiod -sizes 100000 -before /tmp/rj-old   that run also timed for a
#                                    binary built before a change, in turns (-pairs 2: B A A B)
# Extra arguments go to reportbench. Without Java/Node (no DynamoDB Local)
# set RJBENCH_NO_SERVERS=1: the DynamoDB scenarios are then skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/reportbench.XXXXXX")
cleanup() {
  [ -z "${RJBENCH_NO_SERVERS:-}" ] && scripts/servers.sh stop "$out/srv" || true
  rm -rf "$out"
}
trap cleanup EXIT
go build -o "$out/reportjob" ./cmd/reportjob
go build -o "$out/reportbench" ./cmd/reportbench
if [ -z "${RJBENCH_NO_SERVERS:-}" ]; then
  scripts/tools.sh
  # A million items and a Scan of them need more than the tests' 512m heap.
  RJ_DYNAMODB_HEAP=${RJ_DYNAMODB_HEAP:-3g} scripts/servers.sh start "$out/srv"
  # shellcheck disable=SC1091
  . "$out/srv/env"
fi
echo "reportbench: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
RJBENCH_S3_PID=${RJBENCH_S3_PID:-$( [ -f "$out/srv/pids" ] && sed -n 3p "$out/srv/pids" )} \
RJBENCH_DYNAMODB_PID=${RJBENCH_DYNAMODB_PID:-$( [ -f "$out/srv/pids" ] && head -1 "$out/srv/pids" )} \
  "$out/reportbench" -bin "$out/reportjob" -json "${RJBENCH_JSON:-bench-results.json}" "$@"

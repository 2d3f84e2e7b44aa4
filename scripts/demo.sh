#!/usr/bin/env bash
# Builds bin/reportjob (the first build compiles every dependency; later
# ones take seconds) and runs its demo: ./scripts/demo.sh [demo flags].
# What the build and the demo print goes to stderr; the demo's table and
# summary line to stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin/reportjob"
# Named as the user would type it from the repository.
[ "$PWD" = "$root" ] && bin=bin/reportjob
echo "demo: building bin/reportjob (the first build compiles every dependency: about 4 min" \
  "on 2 cores, longer under load; later builds take seconds)..." >&2
started=$(date +%s)
(cd "$root" && go build -o bin/reportjob ./cmd/reportjob)
echo "demo: built in $(($(date +%s) - started)) s" >&2
exec "$bin" demo "$@"

#!/usr/bin/env bash
# Bounded fuzz run of every fuzz target (issue 9, "Bad data"): each target
# for FUZZTIME (default 2s), then one line per target with its executions.
# Their seed corpora (f.Add and testdata/fuzz/FuzzX/) already run in every
# plain `go test`; this explores beyond them.
#   scripts/fuzz.sh                      every target, 2 s each (about 60 s in all)
#   FUZZTIME=5m scripts/fuzz.sh          a long run
#   scripts/fuzz.sh ./internal/money     the targets of some packages
# A failing input is written to the package's testdata/fuzz/FuzzX/ by go
# test: commit it as a regression seed once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-2s}
# Every target, as package:Target (go test -list would build each package once more).
targets=(
  ./internal/item:FuzzParse ./internal/item:FuzzDecodeBinary
  ./internal/money:FuzzParseAmount ./internal/money:FuzzFormat
  ./internal/keys:FuzzParsePartition ./internal/keys:FuzzParseSortKeyTime ./internal/keys:FuzzEscapeAgency
  ./internal/encode:FuzzCSVNeutralise
  ./internal/config:FuzzParse
  ./internal/ingest:FuzzReadJSONL ./internal/ingest:FuzzRecordRoundTrip
  ./internal/sink:FuzzCheckKey ./internal/sink:FuzzAgencyKey
)
log=$(mktemp "${TMPDIR:-/tmp}/reportjob-fuzz.XXXXXX")
trap 'rm -f "$log"' EXIT
total=0 failed=0 start=$SECONDS
for t in "${targets[@]}"; do
  pkg=${t%%:*} target=${t#*:}
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx -- "$pkg"; then
    continue
  fi
  corpus="$pkg/testdata/fuzz/$target"
  before=$(ls "$corpus" 2>/dev/null | wc -l)
  status=
  for attempt in 1 2; do
    if go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=2s "$pkg" > "$log" 2>&1; then
      status=ok
      break
    fi
    # Go 1.26's fuzzing coordinator can fail a target with a bare
    # "context deadline exceeded" when -fuzztime ends while a worker is
    # busy, having found nothing (golang/go#75804, fixed in Go 1.27). Such
    # a failure writes no failing input: run the target once more. A
    # failure that wrote an input is a finding and fails at once.
    after=$(ls "$corpus" 2>/dev/null | wc -l)
    if [ "$attempt" -eq 1 ] && [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log"; then
      echo "fuzz: $pkg $target: \"context deadline exceeded\" with no failing input (golang/go#75804): once more" >&2
      continue
    fi
    break
  done
  if [ "$status" != ok ]; then
    status=FAIL failed=$((failed + 1))
    cat "$log" >&2
  fi
  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  execs=${execs:-0}
  total=$((total + execs))
  printf 'fuzz %-4s %-22s %-20s %10s execs in %s\n' "$status" "$pkg" "$target" "$execs" "$fuzztime"
done
printf 'fuzz: %d execs in all, %d failing targets, %ds\n' "$total" "$failed" $((SECONDS - start))
[ "$failed" -eq 0 ]

#!/bin/bash
# Writes this fixture: the store (data/reportjob.db) and the sink (reports/) of job "legacy" as the binary
# from before the statements' audit chain named periods by their content digest (commit 500282e) left
# them: daily periods, statements in UTC with PDF, CSV and Parquet. January final (its statements name
# each period by its manifest's sha256), then 2026-01-30 restated by a backfill (late items of acme and
# of delta, an agency January never had) and booked in February's draft as a prior-period adjustment.
#   mkdir /tmp/before && git archive 500282e | tar -x -C /tmp/before && (cd /tmp/before && go build -o /tmp/old ./cmd/reportjob)
#   cd cmd/reportjob/testdata/statements-legacy && rm -rf data reports && OLD=/tmp/old ./make.sh
# TestStatementsFromBeforeDigests (statements_legacy_test.go) checks and repairs a copy with the binary
# of this tree.
set -eu
B=${OLD:?set OLD to the binary built at commit 500282e}
$B init
$B ingest --file input/base.jsonl --allow-late --now 2026-02-02T00:00:00Z
$B run --now 2026-02-02T00:05:00Z
$B run --now 2026-02-02T02:05:00Z                 # January final (close_after 1d, its rechecks done)
$B ingest --file input/late.jsonl --allow-late --now 2026-02-03T00:00:00Z
$B run --backfill --from 2026-01-30T00:00:00Z --to 2026-01-31T00:00:00Z --now 2026-02-03T00:05:00Z

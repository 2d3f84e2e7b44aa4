#!/bin/bash
# Writes this fixture: the store (data/reportjob.db) and the sink (reports/) of job "upg" as the binary from
# before the dedupe index's runs (commit 304813e, store format reportjob/1) left them. Hourly periods
# 2026-11-01T00 to 06 delivered, with retries (same transaction_id and content, later recorded_at) and
# conflicting copies (same id, another amount) of ids billed earlier, a restatement by recheck (02: a late
# retry and a late new item), period 05 owed its recheck, and hour 06 ingested but not delivered (a third
# copy of t-00-01 among it). input/*.jsonl: base-H-H = 10 transactions t-HH-NN per hour; the others are copies.
#   git worktree add --detach /tmp/before 304813e && (cd /tmp/before && go build -o /tmp/old ./cmd/reportjob)
#   cd cmd/reportjob/testdata/upgrade-v1 && rm -rf data reports && OLD=/tmp/old ./make.sh
# TestUpgradeFromFormatV1 (upgrade_test.go) upgrades a copy with the binary of this tree.
set -eu
B=${OLD:?set OLD to the binary built at commit 304813e}
D=2026-11-01
$B init
$B ingest --file input/base-0-3.jsonl --allow-late --now ${D}T04:05:00Z
$B run --now ${D}T02:05:00Z
$B ingest --file input/r2.jsonl --allow-late --now ${D}T04:05:00Z      # 02: t-00-01 retried, t-00-02 conflicting
$B run --now ${D}T03:05:00Z
$B ingest --file input/late2.jsonl --allow-late --now ${D}T04:05:00Z   # late into 02: t-01-03 retried, late-02 new
$B run --now ${D}T04:05:00Z                                            # 03 delivered, 02 restated (recheck)
$B ingest --file input/base-4-5.jsonl --allow-late --now ${D}T06:05:00Z
$B ingest --file input/r45.jsonl --allow-late --now ${D}T06:05:00Z     # t-02-05 retried in 04 and 05, t-03-01 conflicting in 05
$B run --now ${D}T06:05:00Z                                            # 04, 05 delivered; 05 owes its recheck at 07:00
$B ingest --file input/base-6.jsonl --allow-late --now ${D}T07:05:00Z  # 06, with a third copy of t-00-01: not delivered

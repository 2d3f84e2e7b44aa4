// Package report builds the per-agency commission reports of a period and
// runs the job that delivers them.
//
// A Builder reads every partition of a period from a Source (never a
// scan), validates each item, drops duplicates and rejects conflicts,
// aggregates in integer minor units, and writes summary.parquet,
// summary.csv, transactions.parquet, rejects.jsonl and, last,
// manifest.json to a Sink. Memory is bounded by the dedupe set: line items
// are sorted externally (spilled in sorted runs to a temp folder) and
// streamed, rejects stream to temp files.
//
// A Job takes the job's lease from a checkpoint.Store, works out the due
// periods from the checkpoint, builds them oldest first, and moves the
// checkpoint after each period's manifest is delivered.
package report

// Package report holds what every stage of the job agrees on: report
// periods and which of them are due, which partitions a period reads, the
// layout of the delivered objects (one dataset per prefix, content-hash
// names), the manifest that is a period's commit record, and the rows the
// files hold.
//
// The flow of a run, one package per stage:
//
//	collect    read a period's partitions (never a scan), validate, fingerprint,
//	           dedupe within the period and against the dedupe index
//	aggregate  per (agency, currency) sums in 128 bits, line items in file order,
//	           adjustments between two revisions
//	encode     Parquet and CSV files, byte-identical for the same rows
//	publish    upload the objects, write the manifest conditionally, fenced by
//	           the lease, then delete what the manifest no longer lists
//	job        the lease, due periods, rechecks, backfill, verify, the checkpoint
package report

package collect

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// Source reads partitions of the data table. It never scans: every read
// names one partition key.
//
// Query calls fn with successive pages of the items of partition pk whose
// sort key is greater than after ("" for the whole partition), in ascending
// sort key order (byte order of the UTF-8 key), until the partition is done
// or fn returns an error, which Query returns as is. A partition with no
// items is not an error: fn is not called. Pages are bounded (DynamoDB: 1 MB);
// fn must not keep the slice after it returns, but may keep its items: an
// item's strings and Attrs map are never reused or changed by Query. Implementations retry
// throttling and transient errors themselves; an error from Query is final
// for that call. Query is safe for concurrent use.
type Source interface {
	Query(ctx context.Context, pk, after string, fn func(page []item.Item) error) error
}

// RecordSource is a Source that can also give a partition's items as
// item.Records: QueryRecords is Query (same pages, same order, same
// errors) with each item as item.RecordOf would make it, decoded without
// building the item's map when it has no attribute outside the contract.
// The records' strings are never changed either, but may share memory with
// other records' (item.Strings): a string kept long is copied first.
// Read uses it when its Source has it.
type RecordSource interface {
	QueryRecords(ctx context.Context, pk, after string, fn func(page []item.Record) error) error
}

// FPLen is the length of a claim's content fingerprint: the first 16
// bytes of item.Transaction.Fingerprint.
const FPLen = 16

// Claim says that a transaction id was billed by a period: the dedupe
// index's entry for the id.
type Claim struct {
	ID string
	// Period is the start of the period that billed the transaction.
	Period time.Time
	// End is the end of that period; zero for a claim written before
	// claims recorded it (see ClaimEnd).
	End time.Time
	// FP is the transaction's billing content fingerprint.
	FP [FPLen]byte
	// Expires is when the store may delete the claim (DynamoDB's TTL, the
	// embedded sweep): the billing period's end (or the report clock when
	// the claim was written, if later: a backfill; on a WallClockIndex the
	// wall clock too) plus ClaimRetention of the window in force when it
	// was written. Whether the claim counts is
	// decided at look-up, with the window in force then (see Counts); its
	// expiry only bounds how long it is kept.
	Expires time.Time
}

// WallClockIndex is an Index whose store deletes expired claims and
// sightings by its own wall clock (DynamoDB's Time to Live), not when the
// job sweeps them by the report clock (the embedded store). Dedupe keeps
// what it writes there at least ClaimRetention after DedupeOptions.Wall
// too, so that a run whose report clock is in the past (`run --now`)
// writes no claim the store deletes at once.
type WallClockIndex interface {
	Index
	// ExpiresByWallClock marks the index; it does nothing.
	ExpiresByWallClock()
}

// RetentionFloor is the least time a claim is kept after its billing
// period's end, whatever report.dedupe_window is: a raise of the window to
// at most this (or twice the old window, when more) protects every claim
// already written.
const RetentionFloor = 35 * 24 * time.Hour

// ClaimRetention is how long after its billing period's end (or after it
// was written, when later) a claim written under window is kept: max(2 x window, RetentionFloor). Twice the window,
// so that a backfill or restatement of a period up to a window old finds
// every claim that counts for it though the clock has moved on; at least
// RetentionFloor, so that a raise of the window protects the claims already
// written (SPEC section 6). A raise beyond the retention of the old window
// protects only the claims that still exist: a retry later than that after
// a transaction billed before the raise is billed again.
func ClaimRetention(window time.Duration) time.Duration {
	return max(2*window, RetentionFloor)
}

// ClaimEnd is the end of the period that billed cl. A claim written before
// claims recorded their period's end is read as a period of periodLen (the
// length of report.period now).
func (cl Claim) ClaimEnd(periodLen time.Duration) time.Time {
	if cl.End.IsZero() {
		return cl.Period.Add(periodLen)
	}
	return cl.End
}

// Counts reports whether cl, the claim of another period, makes period p's
// copy of the transaction a copy of what that period billed: whether the
// two periods lie within window of each other, by the window in force now
// (report.dedupe_window at look-up: raising it protects the claims already
// written, lowering it lets a retry older than the new window be billed
// again). It is symmetric: a rebuild of the period that billed a
// transaction first is not made to drop it by a claim that a period
// outside the window wrote later, so each transaction stays in the period
// that billed it first (SPEC section 3). This is the one place that
// decides whether a claim counts.
func (cl Claim) Counts(p report.Period, window time.Duration) bool {
	end := cl.ClaimEnd(p.End.Sub(p.Start))
	return p.Start.Before(end.Add(window)) && cl.Period.Before(p.End.Add(window))
}

// MaxLookup is the most ids one Index.Lookup call takes (DynamoDB's
// BatchGetItem limit).
const MaxLookup = 100

// Index is the dedupe index: for every transaction id billed within
// report.dedupe_window, the period that billed it. It lives in the state
// store (the embedded file, or the DynamoDB state table with TTL) and costs
// O(transactions of the periods built): it is read by id, in batches, and
// never scanned.
//
// Index writes are not fenced by the lease in the store: the caller checks
// that it still holds its lease before it starts and before it commits a
// ClaimWriter.
type Index interface {
	// Lookup returns the stored claims of ids (at most MaxLookup distinct
	// ids), expired ones included, in any order; an id without a claim is
	// absent. Reads are strongly consistent: a claim written by an earlier
	// committed ClaimWriter is seen.
	Lookup(ctx context.Context, job string, ids []string) ([]Claim, error)
	// PeriodIDs yields, in ascending byte order, the ids that the period
	// starting at period claimed at its last committed ClaimWriter (none
	// when it never did, or when the store removed that list after its
	// expiry: swept on the embedded store, by Time to Live on DynamoDB;
	// never because the host's clock says it expired). A yielded error
	// ends the sequence.
	PeriodIDs(ctx context.Context, job string, period time.Time) iter.Seq2[string, error]
	// NewClaimWriter starts replacing the claims of period. Claims it
	// writes record the period's start and end and expire at expires.
	// The store may sweep claims and lists that expired at or before
	// sweep; callers pass a time that does not run ahead of the periods
	// being built (see DedupeOptions.Now).
	NewClaimWriter(ctx context.Context, job string, period report.Period, expires, sweep time.Time) (ClaimWriter, error)
}

// ClaimWriter replaces one period's claims. Until Commit, the period's
// previous id list (PeriodIDs) stays in force; by-id claims written by Add
// and removed by Release take effect as they are written (a crash may leave
// some of them: the next writer of the period repairs them, since it
// recomputes every claim of the period and releases, of the ids Previous
// yields, what is gone).
// Exactly one of Commit or Abort must be called. A ClaimWriter is not safe
// for concurrent use.
type ClaimWriter interface {
	// Add records that the period bills id (ids in strictly ascending byte
	// order across calls). When write is true the by-id claim is
	// (re)written with the writer's period, fp and expiry; when false the
	// id only joins the period's id list and its by-id claim is left as it
	// is (it is already the period's, with this fp, or a later period's
	// outside the window: see Claim.Counts).
	Add(id string, fp [FPLen]byte, write bool) error
	// Release removes id's by-id claim if it is still this period's (an
	// id the period billed before and no longer bills). Any order.
	Release(id string) error
	// Previous yields, in ascending byte order and each once, every id
	// whose by-id claim an earlier writer of the period may have stored:
	// the period's last committed list (PeriodIDs) and the ids of every
	// writer that started before this one and never committed (it crashed,
	// failed or lost its lease after some of its claims were written).
	// This is the one place that decides which claims a period's next
	// writer must reconsider: a store puts each id in a list that Previous
	// of the next writer reads before it stores the id's claim, so no claim
	// outlives a failed run. The caller releases the ids it no longer
	// bills; Commit then drops the lists of those failed writers. Called
	// at most once, before Commit or Abort; a yielded error ends the
	// sequence.
	Previous() iter.Seq2[string, error]
	// Commit flushes what is pending and makes the ids added the period's
	// id list, replacing the previous one, atomically.
	Commit() error
	// Abort drops what was not written yet; the previous id list stays,
	// and the ids whose claims were written stay listed for the next
	// writer's Previous.
	Abort()
}

// ExpectingClaimWriter is a ClaimWriter that can be told, before the
// first Add, at most how many ids the period will add, so that it can
// build what it derives from them (the embedded index's filter) while
// it writes them rather than at Commit. More Adds than expected are not
// an error: only slower.
type ExpectingClaimWriter interface {
	ClaimWriter
	Expect(ids int64)
}

// MaxIDChars is the longest transaction id, in characters (item
// validation allows no longer one).
const MaxIDChars = 256

// CheckJob reports whether job can name a job in an Index: the stores
// build keys from it with '#' as a separator.
func CheckJob(job string) error {
	for i := 0; i < len(job); i++ {
		c := job[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("job name %q: want 1 to 255 characters of [A-Za-z0-9._-]", job)
		}
	}
	if len(job) == 0 || len(job) > 255 {
		return fmt.Errorf("job name %q: want 1 to 255 characters of [A-Za-z0-9._-]", job)
	}
	return nil
}

// CheckID reports whether id can be a claim's transaction id: non-empty,
// valid UTF-8, at most MaxIDChars characters.
func CheckID(id string) error {
	// The usual id is ASCII: valid, one character a byte.
	ascii := id != "" && len(id) <= MaxIDChars
	for i := 0; ascii && i < len(id); i++ {
		ascii = id[i] < utf8.RuneSelf
	}
	if ascii {
		return nil
	}
	clip := id
	if len(clip) > 300 {
		clip = clip[:300] + "..."
	}
	switch n := utf8.RuneCountInString(id); {
	case id == "":
		return errors.New("transaction id is empty")
	case !utf8.ValidString(id):
		return fmt.Errorf("transaction id %q is not valid UTF-8", clip)
	case n > MaxIDChars:
		return fmt.Errorf("transaction id %q has %d characters, more than %d", clip, n, MaxIDChars)
	}
	return nil
}

// Package pricing decides which commission rate a transaction is billed at.
// It is the one place that says so (Pricer.Of):
//
//  1. the transaction's own commission_bps, when it has one;
//  2. else, when the period is being rebuilt (recheck, verify --repair,
//     backfill), the rate its published revision billed the transaction
//     at, when it billed it: a rebuilt period never re-prices a
//     transaction it already billed (SPEC section 6);
//  3. else its agency's rate (commission.agencies) in force at its
//     recorded_at, when the agency has one in force then;
//  4. else the default rate (commission.default_bps) in force at its
//     recorded_at;
//
// 3 and 4 looked up in today's configuration, so that a transaction new
// to a period (a late item) is priced like any transaction billed today.
// The billed rates come from the revision's line items (its transactions
// Parquet); a revision published without line items (report.line_items
// false) has none, and its rebuild prices every transaction with the
// table its manifest records instead. Only an explicit re-pricing
// (verify --repair --reprice) prices a billed period with today's table
// throughout. See ForPeriod.
package pricing

import (
	"maps"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/item"
)

// MaxBPS is the highest rate: 100%.
const MaxBPS = 10000

// Rate is a commission rate in basis points from an instant on.
type Rate struct {
	BPS int32 `json:"bps"`
	// From is the first recorded_at the rate applies to; zero: from the
	// start.
	From time.Time `json:"from,omitzero"`
}

// Schedule is one rate over time, sorted by From, each From later than
// the one before; only the first may be zero. config validates this.
type Schedule []Rate

// At returns the rate in force at t: the last whose From is not after t.
// ok is false when t is before the first rate.
func (s Schedule) At(t time.Time) (bps int32, ok bool) {
	for _, r := range s {
		if r.From.After(t) {
			break
		}
		bps, ok = r.BPS, true
	}
	return bps, ok
}

// Table is the commission rates of a job (config commission.*), or those a
// period was billed with (report.Manifest.Rates).
type Table struct {
	Default Schedule `json:"default"`
	// Agencies are the agencies with rates of their own. Before the first
	// rate of an agency's schedule, the default applies.
	Agencies map[string]Schedule `json:"agencies,omitempty"`
}

// Flat is the table with one default rate from the start and no agency
// rates.
func Flat(bps int32) Table { return Table{Default: Schedule{{BPS: bps}}} }

// Of returns the rate t gives tx: rules 1, 3 and 4 of the package doc
// (Pricer.Of adds rule 2).
func (t Table) Of(tx *item.Transaction) int32 {
	if tx.HasBPS {
		return tx.BPS
	}
	if bps, ok := t.Agencies[tx.AgencyID].At(tx.RecordedAt); ok {
		return bps
	}
	bps, _ := t.Default.At(tx.RecordedAt)
	return bps // config makes the default's first rate apply from the start
}

// Equal reports whether t and o price every transaction alike.
func (t Table) Equal(o Table) bool {
	return equal(t.Default, o.Default) && maps.EqualFunc(t.Agencies, o.Agencies, equal)
}

func equal(a, b Schedule) bool {
	return slices.EqualFunc(a, b, func(x, y Rate) bool { return x.BPS == y.BPS && x.From.Equal(y.From) })
}

// Revision is what a period's published revision tells about the rates
// it billed.
type Revision struct {
	// Table is the table its manifest records (report.Manifest.Rates);
	// nil for a manifest from before rates were recorded.
	Table *Table
	// Billed are the rates its line items billed its transactions at; nil
	// when it has no line items (report.line_items false).
	Billed *Billed
	// Transactions is how many transactions it billed.
	Transactions int64
}

// ForPeriod returns the Pricer of a build of a period whose published
// revision is rev (nil: none, the period is billed for the first time),
// current being today's configuration:
//
//   - a first billing, a revision that billed nothing, or a re-pricing
//     (reprice: verify --repair --reprice): today's table for every
//     transaction;
//   - a revision with line items: each transaction it billed keeps the
//     rate it was billed at, a transaction new to the period gets today's
//     table;
//   - a revision without line items: the table its manifest records for
//     every transaction, the new ones included (one table for the period:
//     the per-transaction rates were not kept), or today's table when it
//     records none (taken to have been billed with it, once: the next
//     revision records it).
//
// The Pricer's Table is what the new revision's manifest records.
func ForPeriod(rev *Revision, current Table, reprice bool) *Pricer {
	switch {
	case rev == nil || reprice || rev.Transactions == 0:
		return current.Pricer()
	case rev.Billed != nil:
		return &Pricer{table: current, billed: rev.Billed}
	case rev.Table != nil:
		return rev.Table.Pricer()
	default:
		return current.Pricer()
	}
}

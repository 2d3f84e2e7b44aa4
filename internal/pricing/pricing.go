// Package pricing decides which commission rate a transaction is billed at.
// It is the one place that says so:
//
//  1. the transaction's own commission_bps, when it has one;
//  2. else its agency's rate (commission.agencies) in force at its
//     recorded_at, when the agency has one in force then;
//  3. else the default rate (commission.default_bps) in force at its
//     recorded_at;
//
// looked up in the rate table the period was first billed with (recorded
// in its manifest), not in today's configuration: a rebuilt period never
// re-prices a transaction it already billed (SPEC section 6). Only an
// explicit re-pricing (verify --repair --reprice) prices a billed period
// with today's table. See ForPeriod.
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

// Of returns the rate tx is billed at under t (see the package doc).
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

// ForPeriod returns the table a build of a period prices with, billed
// being the table its published revision recorded (nil: none published,
// or a manifest from before rates were recorded) and current today's
// configuration. A period is priced with the table it was first billed
// with, so that a restatement for late items changes the period by
// exactly those items (a late item is priced with the period's table
// too: a period has one rate table). Today's table applies to a period
// billed for the first time, to one whose manifest recorded no table
// (which is then taken to have used today's, once: the next revision
// records it), and when reprice asks for it (verify --repair --reprice).
func ForPeriod(billed *Table, current Table, reprice bool) Table {
	if billed == nil || reprice {
		return current
	}
	return *billed
}

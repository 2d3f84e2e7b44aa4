package collect

import (
	"context"
	"time"
)

// Kinds of sightings.
const (
	// SightingDropped: an identical copy of a transaction another period
	// billed came in this period and was not billed again.
	SightingDropped = "dropped"
	// SightingRejected: a copy with this id was rejected in this period
	// (a conflicting copy, or one that differs from what another period
	// billed).
	SightingRejected = "rejected"
)

// Sighting records that a period's build saw a copy of a transaction id
// and did not bill it: the index's only record of the copies dropped as
// duplicates, and of the rejects by id (the rejects files are per
// period). It is kept as long as the period's claims (Expires), so that
// `transactions --id` finds it in O(1) periods.
type Sighting struct {
	ID string
	// Period is the start of the period the copy came in.
	Period time.Time
	// Kind is SightingDropped or SightingRejected.
	Kind    string
	Expires time.Time
}

// SightingIndex is an Index that also records sightings. Both stores'
// indexes are; Dedupe records sightings only in an Index that is one.
// Writes are usually rare (a copy across periods, a conflict): the billing
// of the transactions costs nothing more. A period of many (a producer's
// replay) records them in calls of about 10,000, as its dedupe goes.
type SightingIndex interface {
	Index
	// RecordSightings stores ss. It is idempotent: the same (id, period,
	// kind) is one record, whose expiry is the latest written. The store
	// may sweep sightings that expired at or before sweep (see
	// NewClaimWriter).
	RecordSightings(ctx context.Context, job string, ss []Sighting, sweep time.Time) error
	// Sightings returns the stored sightings of id, expired ones included
	// until the store removed them, in any order.
	Sightings(ctx context.Context, job, id string) ([]Sighting, error)
}

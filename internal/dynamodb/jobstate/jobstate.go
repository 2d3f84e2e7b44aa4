// Package jobstate is the job state (checkpoint.Store) of the DynamoDB
// store: checkpoints, leases, owed rechecks and recent restatements, one
// item per job in the store's state table (HASH "job" (S), created by
// dynamodb.Store.Init). Times are Unix milliseconds:
//
//	job           S  job name
//	checkpoint    N  end of the last delivered period (absent: none yet)
//	lease_owner   S  holder of the lease, or its last holder once released
//	lease_token   N  fencing token, +1 on every Acquire; kept on Release
//	lease_expires N  lease expiry (absent when released)
//	rechecks      M  periods owed a recheck: key = period start in decimal
//	                 Unix milliseconds ("1709251200000"), value =
//	                 M{end: N, read: N (absent when zero)}; created empty by
//	                 Acquire when missing (items of the first version)
//	restated      L  latest restatements, newest first, at most
//	                 checkpoint.MaxRestated: M{start: N, end: N,
//	                 revision: N, reason: S, at: N (absent when zero),
//	                 items_before: N, items_after: N}; absent when none
//	grid          L  the period grid of the delivered periods
//	                 (checkpoint.State.Grid), ascending: M{from: N,
//	                 period: N (milliseconds)}; set whole, with the
//	                 checkpoint move that delivers a period of a new grid;
//	                 absent in items written before grids were recorded
//
// A map keyed by period start lets Commit and Update set or remove one
// entry (SET rechecks.#k = :v, REMOVE rechecks.#k) without reading the
// others; the short restated list is set whole.
//
// The checkpoint is a number, not RFC 3339 text, because Commit compares it
// for equality inside a condition expression: a number has one canonical
// form (DynamoDB normalises it), so a checkpoint written by hand or by
// another tool as "…T01:00:00Z" or "…T01:00:00.000Z" cannot make an
// otherwise equal compare-and-set fail; and it matches lease_expires.
//
// The same table holds the dedupe index (package dedupeindex) under keys
// that no job name can take (job names have no '#').
package jobstate

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

var _ checkpoint.Store = (*State)(nil)

// API is the subset of *dynamodb.Client the job state uses.
// Implementations must be safe for concurrent use and retry transient
// errors as the SDK client does.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// State is the job state in one state table. It is safe for concurrent
// use.
type State struct {
	api   API
	table string
}

// New returns the job state in table over api. It does not touch the
// table.
func New(api API, table string) *State {
	return &State{api: api, table: table}
}

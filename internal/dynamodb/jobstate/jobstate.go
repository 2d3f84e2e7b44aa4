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
//	recheck_months SS the months (UTC, "2024-03") whose month items hold
//	                 owed rechecks (absent when none)
//	rechecks      M  only in items written before month items: periods owed
//	                 a recheck, key = period start in decimal Unix
//	                 milliseconds, value = M{end: N, read: N}; moved into
//	                 month items (and removed) by the next fenced write
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
// Owed rechecks are items of their own, one per month of period starts
// (rechecks.go), so that the job item's size does not grow with them:
//
//	job           S  "<job>#rechecks#<YYYY-MM>"
//	p<start ms>   M  one per period owed a recheck: M{end: N, read: N
//	                 (absent when zero)}
//
// A month item holds at most one entry per period of its month (2,976 at
// 15 minutes: about 125 KB of the 400 KB item limit), whatever the
// backlog. A write that sets or drops a recheck is one TransactWriteItems
// (at most 3 actions): the job item's update (checkpoint, restated,
// grid, ADD to recheck_months), conditional on the lease as every state
// write, and SET (REMOVE) of the entry in its month item; a month item
// left empty is deleted and taken off the list afterwards. A write that
// touches no recheck stays one UpdateItem. Load reads the job item, then
// its month items (BatchGetItem, strongly consistent). Every write is
// also conditional on the job item holding no rechecks map of the old
// layout: when it holds one, the write first moves it into month items
// (migrate: transactions of at most 100 actions, each fenced by the
// lease and idempotent), then writes.
//
// The short restated list is set whole.
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
	"sync"

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
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	// PutItem and DeleteItem stand in for TransactWriteItems on a server
	// without transactions (dynalite).
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// State is the job state in one state table. It is safe for concurrent
// use.
type State struct {
	api   API
	table string
	// mu serialises this process's writes, so that a month item found
	// empty is not refilled before it is deleted (other processes are
	// fenced by the lease).
	mu sync.Mutex
}

// New returns the job state in table over api. It does not touch the
// table.
func New(api API, table string) *State {
	return &State{api: api, table: table}
}

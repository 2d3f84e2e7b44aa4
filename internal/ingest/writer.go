package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/reportjob/reportjob/internal/item"
)

// Writer stores items in the data table.
//
// PutItems stores every item, replacing any item with the same keys, so
// that a retried write of a transaction (same transaction id and recorded
// time, hence same keys) is the same item, not a second one. Items of one
// call have distinct keys. Implementations split the call into the
// backend's batches (DynamoDB: 25 items), retry throttling and
// unprocessed items with backoff until their deadline, and on failure
// return a *WriteError naming every transaction id that may not have been
// written. Nothing is dropped silently.
type Writer interface {
	PutItems(ctx context.Context, items []item.Item) error
}

// BatchSizer is implemented by a Writer that writes best in calls of a
// given number of items (the embedded store: one transaction, one fsync, a
// call). ReadJSONL and Generate use it when their options leave the batch
// size at 0.
type BatchSizer interface {
	PreferredBatch() int
}

// WriteError reports items that were not (or may not have been) written.
type WriteError struct {
	// TransactionIDs of the items not known to be written, in input order.
	TransactionIDs []string
	Err            error
}

func (e *WriteError) Error() string {
	ids := e.TransactionIDs
	more := ""
	if len(ids) > 10 {
		more = fmt.Sprintf(" and %d more", len(ids)-10)
		ids = ids[:10]
	}
	return fmt.Sprintf("%d items not written (transaction_id %s%s): %v",
		len(e.TransactionIDs), strings.Join(ids, ", "), more, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

package report

import (
	"context"

	"github.com/reportjob/reportjob/internal/item"
)

// Source reads partitions of the data table. It never scans: every read
// names one partition key.
//
// Query calls fn with successive pages of the items of partition pk whose
// sort key is greater than after ("" for the whole partition), in ascending
// sort key order (byte order of the UTF-8 key), until the partition is done
// or fn returns an error, which Query returns as is. A partition with no
// items is not an error: fn is not called. Pages are bounded (DynamoDB: 1 MB);
// fn must not keep the slice after it returns. Implementations retry
// throttling and transient errors themselves; an error from Query is final
// for that call. Query is safe for concurrent use.
type Source interface {
	Query(ctx context.Context, pk, after string, fn func(page []item.Item) error) error
}

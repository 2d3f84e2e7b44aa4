package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
)

// ErrExists is returned (wrapped) by PutNew when an item with the same
// keys is already stored.
var ErrExists = errors.New("item already exists")

// errNotAttempted is the cause given for batches skipped after another
// batch failed for good.
var errNotAttempted = errors.New("not attempted after an earlier batch failed")

// PutItems implements ingest.Writer with BatchWriteItem calls of up to 25
// items, WriteConcurrency at a time. Unprocessed items and retryable errors
// (throttling, 5xx, connection errors) are retried with exponential backoff
// and full jitter until WriteDeadline after the batch's first attempt. Any
// other error stops the call: that batch and every batch not yet started
// are reported. The *ingest.WriteError lists, in input order, every item
// not known to be written by its transaction_id (or "PK/SK" for an item
// without one); its Err is the first failure.
func (s *Store) PutItems(ctx context.Context, items []item.Item) error {
	if len(items) == 0 {
		return nil
	}
	reqs := make([]types.WriteRequest, len(items))
	seen := make(map[[2]string]int, len(items))
	for i, it := range items {
		av, err := s.toAttributeValues(it)
		if err == nil {
			if j, dup := seen[[2]string{it.PK, it.SK}]; dup {
				err = fmt.Errorf("items %d and %d have the same keys (%q, %q)", j, i, it.PK, it.SK)
			}
		}
		if err != nil {
			return &ingest.WriteError{TransactionIDs: txIDs(items, nil), Err: fmt.Errorf("put items: %w", err)}
		}
		seen[[2]string{it.PK, it.SK}] = i
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
	}

	type result struct {
		failed []int // indexes into items
		err    error
	}
	nb := (len(items) + batch.Size - 1) / batch.Size
	results := make([]result, nb)
	var (
		mu      sync.Mutex
		stopped bool
		next    int
		wg      sync.WaitGroup
	)
	// take returns the next batch to write, or -1 when none is left or the
	// call has failed for good.
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if stopped || next == nb {
			return -1
		}
		next++
		return next - 1
	}
	for range min(s.opts.WriteConcurrency, nb) {
		wg.Go(func() {
			for b := take(); b >= 0; b = take() {
				lo, hi := b*batch.Size, min((b+1)*batch.Size, len(items))
				failed, err := s.writeBatch(ctx, items, reqs, lo, hi)
				results[b] = result{failed, err}
				if err != nil {
					mu.Lock()
					stopped = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()

	var failed []int
	var firstErr error
	for b := range results {
		r := results[b]
		if b >= next { // never started
			r.err = errNotAttempted
			for i := b * batch.Size; i < min((b+1)*batch.Size, len(items)); i++ {
				r.failed = append(r.failed, i)
			}
		}
		failed = append(failed, r.failed...)
		if r.err != nil && (firstErr == nil || errors.Is(firstErr, errNotAttempted)) {
			firstErr = r.err
		}
	}
	if firstErr == nil {
		return nil
	}
	return &ingest.WriteError{TransactionIDs: txIDs(items, failed), Err: firstErr}
}

// writeBatch writes items[lo:hi] and returns the indexes of the items not
// known to be written, in order, with the reason.
func (s *Store) writeBatch(ctx context.Context, items []item.Item, reqs []types.WriteRequest, lo, hi int) ([]int, error) {
	left, err := s.batch.Write(ctx, s.opts.Table, reqs[lo:hi])
	if len(left) == 0 {
		return nil, err
	}
	return s.unprocessed(items, lo, hi, left), err
}

// unprocessed returns the indexes in [lo, hi) of the items whose keys are
// in un.
func (s *Store) unprocessed(items []item.Item, lo, hi int, un []types.WriteRequest) []int {
	keys := make(map[[2]string]bool, len(un))
	for _, r := range un {
		if r.PutRequest == nil {
			continue
		}
		pk, _ := r.PutRequest.Item[s.opts.PartitionAttr].(*types.AttributeValueMemberS)
		sk, _ := r.PutRequest.Item[s.opts.SortAttr].(*types.AttributeValueMemberS)
		if pk != nil && sk != nil {
			keys[[2]string{pk.Value, sk.Value}] = true
		}
	}
	var out []int
	for i := lo; i < hi; i++ {
		if keys[[2]string{items[i].PK, items[i].SK}] {
			out = append(out, i)
		}
	}
	return out
}

// txIDs returns the transaction ids of items[idx] (all items when idx is
// nil), falling back to "PK/SK" for an item without one.
func txIDs(items []item.Item, idx []int) []string {
	if idx == nil {
		idx = make([]int, len(items))
		for i := range idx {
			idx[i] = i
		}
	}
	out := make([]string, len(idx))
	for j, i := range idx {
		if v, ok := items[i].Attrs[item.AttrTransactionID]; ok && v.Text != "" {
			out[j] = v.Text
		} else {
			out[j] = items[i].PK + "/" + items[i].SK
		}
	}
	return out
}

// PutNew stores it only when no item with its keys exists (condition
// attribute_not_exists on both keys). It returns an error matching
// ErrExists when one does, whatever its content: PutNew never replaces.
func (s *Store) PutNew(ctx context.Context, it item.Item) error {
	av, err := s.toAttributeValues(it)
	if err != nil {
		return fmt.Errorf("put new item: %w", err)
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.opts.Table),
		Item:                     av,
		ConditionExpression:      aws.String("attribute_not_exists(#pk) AND attribute_not_exists(#sk)"),
		ExpressionAttributeNames: map[string]string{"#pk": s.opts.PartitionAttr, "#sk": s.opts.SortAttr},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("put new item (%q, %q) in table %q: %w", it.PK, it.SK, s.opts.Table, ErrExists)
	case err != nil:
		return fmt.Errorf("put new item (%q, %q) in table %q: %w", it.PK, it.SK, s.opts.Table, err)
	}
	return nil
}

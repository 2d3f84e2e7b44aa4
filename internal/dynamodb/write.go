package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
)

// ErrExists is returned (wrapped) by PutNew when an item with the same
// keys is already stored.
var ErrExists = errors.New("item already exists")

// batchSize is DynamoDB's limit of items per BatchWriteItem.
const batchSize = 25

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
	nb := (len(items) + batchSize - 1) / batchSize
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
				lo, hi := b*batchSize, min((b+1)*batchSize, len(items))
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
			for i := b * batchSize; i < min((b+1)*batchSize, len(items)); i++ {
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
	left, err := s.batchWrite(ctx, s.opts.Table, reqs[lo:hi])
	if len(left) == 0 {
		return nil, err
	}
	return s.unprocessed(items, lo, hi, left), err
}

// batchWrite writes reqs (at most 25, distinct keys) to table with
// BatchWriteItem, retrying unprocessed requests and retryable errors (see
// retryBatch). It returns the requests not known to be written: none on
// success.
func (s *Store) batchWrite(ctx context.Context, table string, reqs []types.WriteRequest) ([]types.WriteRequest, error) {
	pending := reqs
	op := batchOp{err: fmt.Sprintf("batch write to table %q", table), log: "retrying batch write", table: table, noun: "items"}
	err := s.retryBatch(ctx, op, func(ctx context.Context) (int, error) {
		out, err := s.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{table: pending},
		})
		if err != nil {
			return len(pending), err
		}
		pending = out.UnprocessedItems[table]
		return len(pending), nil
	})
	return pending, err
}

// batchOp names a batch operation for retryBatch's errors and logs.
type batchOp struct {
	err   string // error prefix: `batch write to table "t"`
	log   string // log message: "retrying batch write"
	table string
	noun  string // what is left unprocessed: "items", "keys"
}

// retryBatch calls try until it leaves nothing pending. try makes one
// attempt with the requests still pending and returns how many are pending
// after it (all of them when it fails) and its error. Unprocessed requests
// and retryable errors (throttling, 5xx, connection errors) are retried
// with exponential backoff and full jitter until WriteDeadline after the
// first attempt; any other error, or ctx ending, stops at once.
func (s *Store) retryBatch(ctx context.Context, op batchOp, try func(ctx context.Context) (pending int, err error)) error {
	deadline := time.Now().Add(s.opts.WriteDeadline)
	// The SDK retryer may wait between its own attempts: bound the whole
	// batch by the deadline.
	bctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var cause error // why the previous attempt did not finish
	for attempt := 0; ; attempt++ {
		pending, err := try(bctx)
		switch {
		case err == nil:
			if pending == 0 {
				return nil
			}
			cause = fmt.Errorf("%d %s unprocessed", pending, op.noun)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", op.err, ctx.Err())
		case bctx.Err() != nil:
			// The deadline cut this attempt short: what kept the batch
			// from finishing is the previous attempt's cause.
			if cause != nil {
				err = fmt.Errorf("%w, then %w", cause, err)
			}
			return fmt.Errorf("%s: gave up after %s (%d attempts): %w", op.err, s.opts.WriteDeadline, attempt+1, err)
		case !retryable(err):
			return fmt.Errorf("%s: %w", op.err, err)
		default:
			cause = err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s: gave up after %s (%d attempts): %w", op.err, s.opts.WriteDeadline, attempt+1, cause)
		}
		d := min(s.backoff(attempt), left)
		level := slog.LevelDebug
		if attempt == 0 {
			level = slog.LevelWarn // once per batch: throttling is worth knowing, not a flood
		}
		s.log.Log(ctx, level, op.log, logTable, op.table, logAttempt, attempt+1,
			logPending, pending, logDelay, d, logErr, cause)
		if err := s.sleep(ctx, d); err != nil {
			return fmt.Errorf("%s: %w", op.err, err)
		}
	}
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

// throttleCodes are DynamoDB's throttling error codes, and server errors
// sent as codes.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
}

// retryable reports whether a failed BatchWriteItem may succeed later:
// throttling, a 5xx status, or what the SDK's retryer retries
// (connection errors, timeouts).
func retryable(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && throttleCodes[ae.ErrorCode()] {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
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

// maxBatchBytes bounds the requests of one asyncWriter batch (BatchWriteItem
// takes up to 16 MB; smaller batches bound the memory in flight).
const maxBatchBytes = 4 << 20

// asyncWriter writes requests to one table in BatchWriteItem calls of up to
// 25 requests (and about maxBatchBytes), with up to WriteConcurrency calls
// in flight, each retried as batchWrite does. The first failure is kept and
// returned by every later put and flush; batches not sent yet are then
// dropped. Its methods must be called from one goroutine.
type asyncWriter struct {
	s     *Store
	ctx   context.Context
	table string
	batch []types.WriteRequest
	size  int
	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

func (s *Store) newAsyncWriter(ctx context.Context, table string) *asyncWriter {
	return &asyncWriter{s: s, ctx: ctx, table: table, slots: make(chan struct{}, s.opts.WriteConcurrency)}
}

// put queues r, whose encoded size is about size bytes. Keys must be
// distinct within a batch: callers put each key once.
func (w *asyncWriter) put(r types.WriteRequest, size int) error {
	if err := w.failed(); err != nil {
		return err
	}
	w.batch = append(w.batch, r)
	w.size += size
	if len(w.batch) == batchSize || w.size >= maxBatchBytes {
		w.send()
	}
	return nil
}

// send starts writing the queued batch, once a slot is free.
func (w *asyncWriter) send() {
	b := w.batch
	w.batch, w.size = nil, 0
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		w.fail(fmt.Errorf("batch write to table %q: %w", w.table, w.ctx.Err()))
		return
	}
	w.wg.Go(func() {
		defer func() { <-w.slots }()
		if left, err := w.s.batchWrite(w.ctx, w.table, b); err != nil {
			w.fail(fmt.Errorf("%d of %d writes not done: %w", len(left), len(b), err))
		}
	})
}

// flush writes what is queued, waits for every call in flight and returns
// the first failure.
func (w *asyncWriter) flush() error {
	if len(w.batch) > 0 && w.failed() == nil {
		w.send()
	}
	w.wg.Wait()
	return w.failed()
}

// wait drops what is queued and waits for the calls in flight.
func (w *asyncWriter) wait() {
	w.batch, w.size = nil, 0
	w.wg.Wait()
}

func (w *asyncWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *asyncWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

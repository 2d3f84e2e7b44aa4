// Package batch runs DynamoDB's batch calls (BatchWriteItem, BatchGetItem)
// to completion: a Retrier retries the requests a call leaves unprocessed,
// and retryable errors (throttling, 5xx, connection errors), with
// exponential backoff and full jitter, until a deadline counted from the
// batch's first attempt; any other error, or the context ending, stops at
// once. AsyncWriter keeps several BatchWriteItem calls in flight.
//
// It is shared by the store's items (dynamodb.Store.PutItems) and the
// dedupe index (package dedupeindex), which pass the options of
// dynamodb.Options (WriteDeadline, WriteConcurrency, RetryBase, RetryCap,
// Logger).
package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Size is DynamoDB's limit of items per BatchWriteItem.
const Size = 25

// Log attribute keys.
const (
	logTable   = "table"
	logAttempt = "attempt"
	logPending = "pending"
	logDelay   = "delay"
	logErr     = "err"
)

// API is the subset of *dynamodb.Client that Write uses.
type API interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Retrier runs batch calls. Its fields must be set before first use and not
// changed after; it is then safe for concurrent use.
type Retrier struct {
	// API makes the BatchWriteItem calls of Write and AsyncWriter.
	API API
	// Deadline is how long a batch keeps retrying, counted from its first
	// attempt.
	Deadline time.Duration
	// RetryBase and RetryCap shape the backoff: before retry n (from 0) it
	// sleeps a random duration in [0, min(RetryCap, RetryBase*2^n)) ("full
	// jitter").
	RetryBase, RetryCap time.Duration
	// Concurrency is the number of calls an AsyncWriter keeps in flight.
	Concurrency int
	// Logger receives retry warnings; it must not be nil.
	Logger *slog.Logger
	// Sleep waits d or until ctx is done; nil means the function Sleep.
	// Tests replace it to observe backoff.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Sleep waits d or until ctx is done, and then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff returns the full-jitter delay before retry n (from 0).
func (r *Retrier) backoff(n int) time.Duration {
	d := r.RetryCap
	if n < 30 {
		if e := r.RetryBase << n; e > 0 && e < d {
			d = e
		}
	}
	return rand.N(d) + 1
}

// Write writes reqs (at most 25, distinct keys) to table with
// BatchWriteItem, retrying unprocessed requests and retryable errors (see
// Retry). It returns the requests not known to be written: none on
// success.
func (r *Retrier) Write(ctx context.Context, table string, reqs []types.WriteRequest) ([]types.WriteRequest, error) {
	pending := reqs
	op := Op{Err: fmt.Sprintf("batch write to table %q", table), Log: "retrying batch write", Table: table, Noun: "items"}
	err := r.Retry(ctx, op, func(ctx context.Context) (int, error) {
		out, err := r.API.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
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

// Op names a batch operation for Retry's errors and logs.
type Op struct {
	Err   string // error prefix: `batch write to table "t"`
	Log   string // log message: "retrying batch write"
	Table string
	Noun  string // what is left unprocessed: "items", "keys"
}

// Retry calls try until it leaves nothing pending. try makes one attempt
// with the requests still pending and returns how many are pending after it
// (all of them when it fails) and its error. Unprocessed requests and
// retryable errors (throttling, 5xx, connection errors) are retried with
// exponential backoff and full jitter until Deadline after the first
// attempt; any other error, or ctx ending, stops at once.
func (r *Retrier) Retry(ctx context.Context, op Op, try func(ctx context.Context) (pending int, err error)) error {
	sleep := r.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	deadline := time.Now().Add(r.Deadline)
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
			cause = fmt.Errorf("%d %s unprocessed", pending, op.Noun)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", op.Err, ctx.Err())
		case bctx.Err() != nil:
			// The deadline cut this attempt short: what kept the batch
			// from finishing is the previous attempt's cause.
			if cause != nil {
				err = fmt.Errorf("%w, then %w", cause, err)
			}
			return fmt.Errorf("%s: gave up after %s (%d attempts): %w", op.Err, r.Deadline, attempt+1, err)
		case !Retryable(err):
			return fmt.Errorf("%s: %w", op.Err, err)
		default:
			cause = err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s: gave up after %s (%d attempts): %w", op.Err, r.Deadline, attempt+1, cause)
		}
		d := min(r.backoff(attempt), left)
		level := slog.LevelDebug
		if attempt == 0 {
			level = slog.LevelWarn // once per batch: throttling is worth knowing, not a flood
		}
		r.Logger.Log(ctx, level, op.Log, logTable, op.Table, logAttempt, attempt+1,
			logPending, pending, logDelay, d, logErr, cause)
		if err := sleep(ctx, d); err != nil {
			return fmt.Errorf("%s: %w", op.Err, err)
		}
	}
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

// Retryable reports whether a failed batch call may succeed later:
// throttling, a 5xx status, or what the SDK's retryer retries
// (connection errors, timeouts).
func Retryable(err error) bool {
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

package dedupeindex

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
	"github.com/reportjob/reportjob/internal/report"
)

// hourOf is the hourly period starting at start.
func hourOf(start time.Time) report.Period {
	return report.Period{Start: start, End: start.Add(time.Hour)}
}

// clientAPI is what the tests' fault injectors wrap: the index's calls and
// the batch writes.
type clientAPI interface {
	API
	batch.API
}

// testClient returns a client of DynamoDB Local, or skips the test.
func testClient(t testing.TB) *dynamodb.Client { return ddbtest.Client(t) }

// newIndex returns an Index on a fresh state table (HASH job S) over api
// (the real client when nil), with its batch.Retrier as dynamodb.New sets
// it up by default, then changed by opts.
func newIndex(t testing.TB, api clientAPI, opts ...func(*batch.Retrier)) *Index {
	t.Helper()
	if api == nil {
		api = testClient(t)
	}
	table := ddbtest.StateTable(t)
	log := slog.New(slog.DiscardHandler)
	b := &batch.Retrier{API: api, Deadline: 2 * time.Minute, RetryBase: 50 * time.Millisecond,
		RetryCap: 5 * time.Second, Concurrency: 4, Logger: log}
	for _, f := range opts {
		f(b)
	}
	return New(api, table, b, log)
}

// faultAPI is the real client with BatchWriteItem faults injected: batch
// decides, for each call (from 1), what to do.
type faultAPI struct {
	clientAPI
	mu    sync.Mutex
	calls int
	batch func(call int, reqs []types.WriteRequest) (write, unprocessed []types.WriteRequest, err error)
}

func (f *faultAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	return ddbtest.InjectBatchWrite(ctx, f.clientAPI, in, opts, func(reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		return f.batch(call, reqs)
	})
}

// sleepRecorder replaces batch.Retrier.Sleep and records each backoff.
type sleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.delays = append(r.delays, d)
	r.mu.Unlock()
	return batch.Sleep(ctx, d)
}

func (r *sleepRecorder) get() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.delays)
}

// newFaultIndex returns an index over f, with short backoff recorded and
// one batch write in flight at a time.
func newFaultIndex(t *testing.T, f *faultAPI, opts ...func(*batch.Retrier)) (*Index, *sleepRecorder) {
	t.Helper()
	f.clientAPI = testClient(t)
	rec := &sleepRecorder{}
	ix := newIndex(t, f, append([]func(*batch.Retrier){func(b *batch.Retrier) {
		b.RetryBase, b.RetryCap = 2*time.Millisecond, 20*time.Millisecond
		b.Concurrency = 1
		b.Sleep = rec.sleep
	}}, opts...)...)
	return ix, rec
}

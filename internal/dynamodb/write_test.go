package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
)

// faultAPI is the real client with BatchWriteItem faults injected: batch
// decides, for each call (from 1), what to do.
type faultAPI struct {
	API
	mu    sync.Mutex
	calls int
	batch func(call int, reqs []types.WriteRequest) (write, unprocessed []types.WriteRequest, err error)
}

func (f *faultAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	return ddbtest.InjectBatchWrite(ctx, f.API, in, opts, func(reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		return f.batch(call, reqs)
	})
}

func (f *faultAPI) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// sleepRecorder replaces the Store's batch.Retrier.Sleep and records each
// backoff.
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

func newFaultStore(t *testing.T, f *faultAPI, opts ...func(*Options)) (*Store, *sleepRecorder) {
	t.Helper()
	f.API = testClient(t)
	s := newStore(t, f, append([]func(*Options){func(o *Options) {
		o.RetryBase, o.RetryCap = 2*time.Millisecond, 20*time.Millisecond
		o.WriteConcurrency = 1
	}}, opts...)...)
	rec := &sleepRecorder{}
	s.batch.Sleep = rec.sleep
	return s, rec
}

func testItems(n int) []item.Item {
	items := make([]item.Item, n)
	for i := range items {
		items[i] = item.Item{
			PK: "202401010000",
			SK: fmt.Sprintf("2024-01-01T00:00:%02d.%016d", i%60, i),
			Attrs: map[string]item.Value{
				item.AttrTransactionID: item.S(fmt.Sprintf("tx-%03d", i)),
				item.AttrAmount:        item.N("19.99"),
			},
		}
	}
	return items
}

func ids(items []item.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Attrs[item.AttrTransactionID].Text
	}
	return out
}

// storedIDs returns the transaction ids stored in the test partition.
func storedIDs(t *testing.T, s *Store) []string {
	t.Helper()
	var got []string
	err := s.Query(t.Context(), "202401010000", "", func(page []item.Item) error {
		got = append(got, ids(page)...)
		return nil
	})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	slices.Sort(got)
	return got
}

func wantWriteError(t *testing.T, err error, wantIDs []string) *ingest.WriteError {
	t.Helper()
	var we *ingest.WriteError
	if !errors.As(err, &we) {
		t.Fatalf("PutItems = %v, want *ingest.WriteError", err)
	}
	if !slices.Equal(we.TransactionIDs, wantIDs) {
		t.Fatalf("WriteError lists %d ids %q, want %d %q", len(we.TransactionIDs), we.TransactionIDs, len(wantIDs), wantIDs)
	}
	return we
}

func TestPutItemsUnprocessedThenAccepted(t *testing.T) {
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		if call <= 2 && len(reqs) > 10 { // write 10, hand the rest back
			return reqs[:10], reqs[10:], nil
		}
		return reqs, nil, nil
	}}
	s, rec := newFaultStore(t, f)
	items := testItems(60)
	if err := s.PutItems(t.Context(), items); err != nil {
		t.Fatalf("PutItems: %v", err)
	}
	if got, want := storedIDs(t, s), ids(items); !slices.Equal(got, want) {
		t.Errorf("stored %d items, want all %d", len(got), len(want))
	}
	// Batch 0: 25 -> 15 -> 5 -> done; then batches 1 and 2.
	if n := f.callCount(); n != 5 {
		t.Errorf("BatchWriteItem called %d times, want 5", n)
	}
	d := rec.get()
	if len(d) != 2 || d[0] <= 0 || d[0] > 2*time.Millisecond || d[1] <= 0 || d[1] > 4*time.Millisecond {
		t.Errorf("backoff delays %v, want 2 in (0, 2ms] and (0, 4ms]", d)
	}
}

func TestPutItemsThrottledThenAccepted(t *testing.T) {
	errs := []error{
		&types.ProvisionedThroughputExceededException{Message: new("slow down")},
		&smithy.GenericAPIError{Code: "ThrottlingException"},
		&smithy.GenericAPIError{Code: "RequestLimitExceeded"},
		&smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusServiceUnavailable}},
			Err:      errors.New("service unavailable"),
		},
	}
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		if call <= len(errs) {
			return nil, nil, errs[call-1]
		}
		return reqs, nil, nil
	}}
	s, rec := newFaultStore(t, f)
	items := testItems(30)
	if err := s.PutItems(t.Context(), items); err != nil {
		t.Fatalf("PutItems: %v", err)
	}
	if got, want := storedIDs(t, s), ids(items); !slices.Equal(got, want) {
		t.Errorf("stored %d items, want all %d", len(got), len(want))
	}
	if d := rec.get(); len(d) != len(errs) {
		t.Errorf("backoff delays %v, want %d", d, len(errs))
	}
}

func TestPutItemsUnprocessedForever(t *testing.T) {
	items := testItems(60)
	poison := map[string]bool{"tx-003": true, "tx-030": true, "tx-059": true}
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) (write, un []types.WriteRequest, _ error) {
		for _, r := range reqs {
			if poison[r.PutRequest.Item[item.AttrTransactionID].(*types.AttributeValueMemberS).Value] {
				un = append(un, r)
			} else {
				write = append(write, r)
			}
		}
		return write, un, nil
	}}
	const deadline = 150 * time.Millisecond
	s, rec := newFaultStore(t, f, func(o *Options) { o.WriteDeadline = deadline; o.WriteConcurrency = 4 })
	start := time.Now()
	err := s.PutItems(t.Context(), items)
	took := time.Since(start)
	we := wantWriteError(t, err, []string{"tx-003", "tx-030", "tx-059"})
	if !strings.Contains(we.Error(), "gave up after") {
		t.Errorf("WriteError %q should say it gave up", we)
	}
	if took < deadline || took > deadline+2*time.Second {
		t.Errorf("PutItems took %s, want about the %s deadline", took, deadline)
	}
	if got := storedIDs(t, s); len(got) != 57 || slices.ContainsFunc(got, func(id string) bool { return poison[id] }) {
		t.Errorf("stored %d items %q, want the 57 others", len(got), got)
	}
	if d := rec.get(); len(d) < 3*3 {
		t.Errorf("only %d retries in %s, want several per batch", len(d), deadline)
	}
}

func TestPutItemsNonRetryable(t *testing.T) {
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		if call == 2 {
			return nil, nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "bad"}
		}
		return reqs, nil, nil
	}}
	s, rec := newFaultStore(t, f)
	items := testItems(80)
	we := wantWriteError(t, s.PutItems(t.Context(), items), ids(items[25:]))
	var ae smithy.APIError
	if !errors.As(we, &ae) || ae.ErrorCode() != "ValidationException" {
		t.Errorf("WriteError cause %v, want the ValidationException", we.Err)
	}
	if got := storedIDs(t, s); !slices.Equal(got, ids(items[:25])) {
		t.Errorf("stored %d items, want the first batch of 25", len(got))
	}
	if n := f.callCount(); n != 2 {
		t.Errorf("BatchWriteItem called %d times, want 2 (no retry, rest not attempted)", n)
	}
	if d := rec.get(); len(d) != 0 {
		t.Errorf("backoff %v on a non-retryable error", d)
	}
}

// TestPutItemsServerValidation has the real server refuse a batch.
func TestPutItemsServerValidation(t *testing.T) {
	s := newStore(t, nil)
	items := testItems(60)
	items[55].Attrs[item.AttrAmount] = item.N("19,99") // not a number
	we := wantWriteError(t, s.PutItems(t.Context(), items), ids(items[50:]))
	var ae smithy.APIError
	if !errors.As(we, &ae) || ae.ErrorCode() != "ValidationException" {
		t.Errorf("WriteError cause %v, want ValidationException", we.Err)
	}
	if got := storedIDs(t, s); !slices.Equal(got, ids(items[:50])) {
		t.Errorf("stored %d items, want the first 50", len(got))
	}
}

func TestPutItemsRefusedBeforeWriting(t *testing.T) {
	s := newStore(t, nil)
	tests := []struct {
		name string
		edit func([]item.Item)
		want string
	}{
		{"other type", func(it []item.Item) { it[7].Attrs["x"] = item.Value{Type: item.Other, Text: "BOOL"} }, "only S and N"},
		{"duplicate keys", func(it []item.Item) { it[9].SK = it[2].SK }, "same keys"},
		{"key attribute in Attrs", func(it []item.Item) { it[1].Attrs[DefaultSortAttr] = item.S("x") }, DefaultSortAttr},
		{"empty sort key", func(it []item.Item) { it[4].SK = "" }, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items := testItems(30)
			tc.edit(items)
			we := wantWriteError(t, s.PutItems(t.Context(), items), ids(items))
			if !strings.Contains(we.Error(), tc.want) {
				t.Errorf("WriteError %q should say %q", we, tc.want)
			}
		})
	}
	if got := storedIDs(t, s); len(got) != 0 {
		t.Errorf("refused calls stored %d items", len(got))
	}
}

func TestPutItemsCancelled(t *testing.T) {
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		return nil, reqs, nil
	}}
	s, _ := newFaultStore(t, f, func(o *Options) { o.WriteDeadline = time.Minute })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	items := testItems(40)
	we := wantWriteError(t, s.PutItems(ctx, items), ids(items))
	if !errors.Is(we, context.DeadlineExceeded) {
		t.Errorf("WriteError cause %v, want context.DeadlineExceeded", we.Err)
	}
}

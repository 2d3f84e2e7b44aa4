package dedupeindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// getFaultAPI injects BatchGetItem faults: batch decides, for each call
// (from 1), which keys the real server gets, which come back unprocessed,
// or an error.
type getFaultAPI struct {
	clientAPI
	mu    sync.Mutex
	calls int
	batch func(call int, keys []map[string]types.AttributeValue) (get, unprocessed []map[string]types.AttributeValue, err error)
}

func (f *getFaultAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	var table string
	var ka types.KeysAndAttributes
	for t, k := range in.RequestItems {
		table, ka = t, k
	}
	get, un, err := f.batch(call, ka.Keys)
	if err != nil {
		return nil, err
	}
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	if len(get) > 0 {
		sub := ka
		sub.Keys = get
		real, err := f.clientAPI.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: sub}}, opts...)
		if err != nil {
			return nil, err
		}
		if len(real.UnprocessedKeys) > 0 {
			return nil, fmt.Errorf("real server left keys unprocessed: %v", real.UnprocessedKeys)
		}
		out.Responses = real.Responses
	}
	if len(un) > 0 {
		ka.Keys = un
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{table: ka}
	}
	return out, nil
}

func (f *getFaultAPI) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newGetFaultIndex returns an index over f with 100 claims written.
func newGetFaultIndex(t *testing.T, f *getFaultAPI, opts ...func(*batch.Retrier)) (*Index, *sleepRecorder, []string) {
	t.Helper()
	f.clientAPI = testClient(t)
	rec := &sleepRecorder{}
	s := newIndex(t, f, append([]func(*batch.Retrier){func(b *batch.Retrier) {
		b.RetryBase, b.RetryCap = 2*time.Millisecond, 20*time.Millisecond
		b.Sleep = rec.sleep
	}}, opts...)...)
	ids := ixSeqIDs(collect.MaxLookup)
	if err := ixWrite(t, s, ids, ixAll); err != nil {
		t.Fatal(err)
	}
	return s, rec, ids
}

func ixLookup(t *testing.T, s *Index, ids []string) ([]string, error) {
	t.Helper()
	claims, err := s.Lookup(t.Context(), ixJob, ids)
	var got []string
	for _, c := range claims {
		if !c.Period.Equal(ixP0) || c.FP != indextest.FP(c.ID, 0) || !c.Expires.Equal(ixExp) {
			t.Errorf("claim %+v: want period %s, the id's fp, expires %s", c, ixP0, ixExp)
		}
		got = append(got, c.ID)
	}
	slices.Sort(got)
	return got, err
}

func TestIndexLookupUnprocessedThenAccepted(t *testing.T) {
	f := &getFaultAPI{batch: func(call int, keys []map[string]types.AttributeValue) (_, _ []map[string]types.AttributeValue, _ error) {
		if call <= 2 && len(keys) > 30 { // serve 30, hand the rest back
			return keys[:30], keys[30:], nil
		}
		return keys, nil, nil
	}}
	s, rec, ids := newGetFaultIndex(t, f)
	ask := append(slices.Clone(ids[1:]), "missing")
	got, err := ixLookup(t, s, ask)
	if err != nil || !slices.Equal(got, ids[1:]) {
		t.Fatalf("Lookup = %d claims, %v; want all %d", len(got), err, len(ids)-1)
	}
	// 100 keys -> 70 -> 40 -> done.
	if n := f.callCount(); n != 3 {
		t.Errorf("BatchGetItem called %d times, want 3", n)
	}
	if d := rec.get(); len(d) != 2 || d[0] <= 0 || d[0] > 2*time.Millisecond || d[1] <= 0 || d[1] > 4*time.Millisecond {
		t.Errorf("backoff delays %v, want 2 in (0, 2ms] and (0, 4ms]", d)
	}
}

func TestIndexLookupThrottledThenAccepted(t *testing.T) {
	errs := []error{
		&types.ProvisionedThroughputExceededException{Message: aws.String("slow down")},
		&smithy.GenericAPIError{Code: "ThrottlingException"},
		&types.RequestLimitExceeded{},
	}
	f := &getFaultAPI{batch: func(call int, keys []map[string]types.AttributeValue) (_, _ []map[string]types.AttributeValue, _ error) {
		if call <= len(errs) {
			return nil, nil, errs[call-1]
		}
		return keys, nil, nil
	}}
	s, rec, ids := newGetFaultIndex(t, f)
	got, err := ixLookup(t, s, ids)
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("Lookup = %d claims, %v; want all %d", len(got), err, len(ids))
	}
	if d := rec.get(); len(d) != len(errs) {
		t.Errorf("backoff delays %v, want %d", d, len(errs))
	}
}

func TestIndexLookupUnprocessedForever(t *testing.T) {
	f := &getFaultAPI{batch: func(call int, keys []map[string]types.AttributeValue) (_, _ []map[string]types.AttributeValue, _ error) {
		if len(keys) > 1 {
			return keys[1:], keys[:1], nil
		}
		return nil, keys, nil
	}}
	const deadline = 150 * time.Millisecond
	s, _, ids := newGetFaultIndex(t, f, func(b *batch.Retrier) { b.Deadline = deadline })
	start := time.Now()
	_, err := ixLookup(t, s, ids)
	if took := time.Since(start); took < deadline || took > deadline+2*time.Second {
		t.Errorf("Lookup took %s, want about the %s deadline", took, deadline)
	}
	if err == nil || !strings.Contains(err.Error(), "gave up after") || !strings.Contains(err.Error(), "1 keys unprocessed") {
		t.Errorf("Lookup = %v, want an error saying it gave up with 1 key unprocessed", err)
	}
}

func TestIndexLookupNonRetryable(t *testing.T) {
	f := &getFaultAPI{batch: func(int, []map[string]types.AttributeValue) (_, _ []map[string]types.AttributeValue, _ error) {
		return nil, nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "bad"}
	}}
	s, rec, ids := newGetFaultIndex(t, f)
	_, err := ixLookup(t, s, ids)
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || !strings.Contains(err.Error(), ixJob) {
		t.Errorf("Lookup = %v, want the ValidationException, naming the job", err)
	}
	if n, d := f.callCount(), rec.get(); n != 1 || len(d) != 0 {
		t.Errorf("%d calls, backoff %v; want 1 call and no retry", n, d)
	}
}

func TestIndexWriterUnprocessedItems(t *testing.T) {
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		if call%2 == 1 && len(reqs) > 5 { // every other call writes 5
			return reqs[:5], reqs[5:], nil
		}
		return reqs, nil, nil
	}}
	s, rec := newFaultIndex(t, f, func(b *batch.Retrier) { b.Concurrency = 3 })
	ids := ixSeqIDs(500)
	if err := ixWrite(t, s, ids, ixAll); err != nil {
		t.Fatalf("write: %v", err)
	}
	if got, err := ixRead(t, s); err != nil || !slices.Equal(got, ids) {
		t.Errorf("PeriodIDs = %d ids, %v; want %d", len(got), err, len(ids))
	}
	for batch := range slices.Chunk(ids, collect.MaxLookup) {
		if got, err := ixLookup(t, s, batch); err != nil || !slices.Equal(got, batch) {
			t.Errorf("Lookup = %d claims, %v; want %d", len(got), err, len(batch))
		}
	}
	if len(rec.get()) == 0 {
		t.Error("no backoff: unprocessed items were not retried")
	}
}

func TestIndexWriterWriteFails(t *testing.T) {
	fail := false
	var mu sync.Mutex
	f := &faultAPI{batch: func(call int, reqs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return nil, nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "item too large"}
		}
		return reqs, nil, nil
	}}
	s, _ := newFaultIndex(t, f)
	old := ixSeqIDs(3)
	if err := ixWrite(t, s, old, ixAll); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	err := ixWrite(t, s, ixSeqIDs(200), ixAll)
	if err == nil || !strings.Contains(err.Error(), "item too large") {
		t.Fatalf("writer over a failing server: %v, want the server's error", err)
	}
	if got, err := ixRead(t, s); err != nil || !slices.Equal(got, old) {
		t.Errorf("PeriodIDs after a failed writer = %q, %v; want the previous list", got, err)
	}
}

// ixLostPut performs a conditional PutItem or UpdateItem (the head's
// commit) twice and returns the second result, as an SDK retry after a lost response does; noOld also drops
// the item returned with a failed condition.
type ixLostPut struct {
	clientAPI
	noOld bool
}

func (a ixLostPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if in.ConditionExpression != nil {
		if _, err := a.clientAPI.PutItem(ctx, in, opts...); err != nil {
			return nil, err
		}
	}
	out, err := a.clientAPI.PutItem(ctx, in, opts...)
	var ccf *types.ConditionalCheckFailedException
	if a.noOld && errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

func (a ixLostPut) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if in.ConditionExpression != nil {
		if _, err := a.clientAPI.UpdateItem(ctx, in, opts...); err != nil {
			return nil, err
		}
	}
	out, err := a.clientAPI.UpdateItem(ctx, in, opts...)
	var ccf *types.ConditionalCheckFailedException
	if a.noOld && errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

func TestIndexCommitLostResponse(t *testing.T) {
	for _, noOld := range []bool{false, true} {
		t.Run(fmt.Sprintf("noOld=%v", noOld), func(t *testing.T) {
			s := newIndex(t, ixLostPut{clientAPI: testClient(t), noOld: noOld})
			for round, ids := range [][]string{ixSeqIDs(5), ixSeqIDs(2)} {
				if err := ixWrite(t, s, ids, ixAll); err != nil {
					t.Fatalf("round %d: Commit whose response was lost: %v", round, err)
				}
				if got, err := ixRead(t, s); err != nil || !slices.Equal(got, ids) {
					t.Errorf("round %d: PeriodIDs = %q, %v; want %q", round, got, err, ids)
				}
			}
		})
	}
}

// TestIndexWriterPumpFailure: a claim write that fails while the caller
// goes on adding is returned by a later Add (or Commit); the writer writes
// no chunk after it, and Commit, called after the failure as the deduper
// does, returns it and stops the pump.
func TestIndexWriterPumpFailure(t *testing.T) {
	f := &faultAPI{batch: func(int, []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, error) {
		return nil, nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "item too large"}
	}}
	s, _ := newFaultIndex(t, f)
	old := heldMax
	heldMax = 100
	t.Cleanup(func() { heldMax = old })
	w, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	cw := w.(*claimWriter)
	ids := ixSeqIDs(100_000)
	added := 0
	for _, id := range ids {
		if err = w.Add(id, indextest.FP(id, 0), true); err != nil {
			break
		}
		added++
	}
	if err == nil {
		err = w.Commit()
	} else if cerr := w.Commit(); cerr == nil {
		t.Error("Commit after a failed Add succeeded")
	}
	if err == nil || !strings.Contains(err.Error(), "item too large") {
		t.Fatalf("writer over failing claim writes: %v after %d Adds, want the server's error", err, added)
	}
	select {
	case <-cw.pump.ended:
	case <-time.After(time.Minute):
		t.Fatal("the pump still runs after Commit")
	}
	// The failing claims were those of chunk 0: the pump wrote no chunk
	// after it (the next writer reads chunks until one is missing).
	if cw.chunks != 1 || ixExists(t, s, chunkKey(ixJob, ixP0, cw.gen, 1)) {
		t.Errorf("%d chunks written, want 1: none after the failure", cw.chunks)
	}
	if got, err := ixRead(t, s); err != nil || len(got) != 0 {
		t.Errorf("PeriodIDs after a failed writer = %d ids, %v; want none", len(got), err)
	}
}

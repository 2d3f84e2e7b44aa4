package jobstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/storetest/checkpointtest"
)

// How lossyAPI loses a response.
type lossMode int

const (
	// repeat performs the call again and returns the second result:
	// exactly what the SDK does when a response is lost in transit.
	repeat lossMode = iota
	// failedRetry returns, instead of the response, the failed condition
	// a retry could meet, with the item as it is after the call (ALL_OLD
	// of the retry).
	failedRetry
)

// lossyAPI is a DynamoDB whose responses to UpdateItem get lost: it
// performs the call for real against the server, then loses the response
// as its mode says. Only the next `lose` calls are affected (all when
// lose < 0).
type lossyAPI struct {
	API
	table string // state table, for failedRetry's read
	mode  lossMode

	mu     sync.Mutex
	lose   int
	second []error // what the caller got instead of each lost response
}

func (a *lossyAPI) arm(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lose, a.second = n, nil
}

func (a *lossyAPI) seconds() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.second...)
}

func (a *lossyAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	a.mu.Lock()
	lose := a.lose != 0
	if a.lose > 0 {
		a.lose--
	}
	a.mu.Unlock()
	out, err := a.API.UpdateItem(ctx, in, opts...)
	if !lose {
		return out, err
	}
	switch a.mode {
	case repeat:
		out, err = a.API.UpdateItem(ctx, in, opts...)
	case failedRetry:
		got, gerr := a.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.table), Key: in.Key, ConsistentRead: aws.Bool(true)})
		if gerr != nil {
			return nil, gerr
		}
		out, err = nil, &types.ConditionalCheckFailedException{Message: aws.String("the conditional request failed (fake)"), Item: got.Item}
	}
	a.mu.Lock()
	a.second = append(a.second, err)
	a.mu.Unlock()
	return out, err
}

// TransactWriteItems loses its response as UpdateItem does: repeat
// performs it again (a retry with a new token), failedRetry answers as a
// retry whose job item condition failed (the transaction's first action),
// with the item as it is.
func (a *lossyAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	a.mu.Lock()
	lose := a.lose != 0
	if a.lose > 0 {
		a.lose--
	}
	a.mu.Unlock()
	out, err := a.API.TransactWriteItems(ctx, in, opts...)
	if !lose {
		return out, err
	}
	switch a.mode {
	case repeat:
		out, err = a.API.TransactWriteItems(ctx, in, opts...)
	case failedRetry:
		got, gerr := a.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.table), Key: attr.JobKey(cpJob), ConsistentRead: aws.Bool(true)})
		if gerr != nil {
			return nil, gerr
		}
		out, err = nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled (fake)"),
			CancellationReasons: []types.CancellationReason{{Code: aws.String("ConditionalCheckFailed"), Item: got.Item}}}
	}
	a.mu.Lock()
	a.second = append(a.second, err)
	a.mu.Unlock()
	return out, err
}

func newLossyState(t *testing.T, mode lossMode) (*State, *lossyAPI) {
	t.Helper()
	api := &lossyAPI{API: testClient(t), mode: mode}
	s := newState(t, api)
	api.table = s.table
	return s, api
}

// The whole job state suite, with every UpdateItem performed twice (the
// first response lost): a retry must never turn a success into an error.
func TestConformanceLostResponses(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
		s, api := newLossyState(t, repeat)
		api.arm(-1)
		return s
	})
}

const cpJob = "billing-report"

var (
	cpNow = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
)

func mustLoad(t *testing.T, s *State, job string) checkpoint.State {
	t.Helper()
	st, err := s.Load(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func isCCF(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Each write, its response lost once, reports what it did, and did it
// once.
func TestLostResponse(t *testing.T) {
	r0 := checkpoint.Recheck{Start: cpNow.Add(-2 * time.Hour), End: cpNow.Add(-time.Hour), Read: cpNow}
	r1 := checkpoint.Recheck{Start: cpNow.Add(-time.Hour), End: cpNow, Read: cpNow}
	rs := checkpoint.Restatement{Start: r0.Start, End: r0.End, Revision: 2, Reason: "recheck", At: cpNow, ItemsBefore: 1, ItemsAfter: 2}
	tests := []struct {
		name  string
		modes []lossMode
		// run calls the method under test with the response lost; it
		// returns what the test then checks against the stored state.
		run func(t *testing.T, s *State, l checkpoint.Lease) (want checkpoint.State)
	}{
		{"Acquire", []lossMode{repeat}, func(t *testing.T, s *State, l checkpoint.Lease) checkpoint.State {
			got, err := s.Acquire(t.Context(), cpJob, "run-a", cpNow.Add(time.Second), time.Minute)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if got.Owner != "run-a" || got.Token <= l.Token || !got.Expires.Equal(cpNow.Add(61*time.Second)) {
				t.Errorf("Acquire = %+v", got)
			}
			return checkpoint.State{Lease: got}
		}},
		{"Renew", []lossMode{repeat, failedRetry}, func(t *testing.T, s *State, l checkpoint.Lease) checkpoint.State {
			got, err := s.Renew(t.Context(), cpJob, l, cpNow.Add(30*time.Second), time.Minute)
			if err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if want := cpNow.Add(90 * time.Second); got.Owner != l.Owner || got.Token != l.Token || !got.Expires.Equal(want) {
				t.Errorf("Renew = %+v, want expiry %v", got, want)
			}
			return checkpoint.State{Lease: got}
		}},
		{"Release", []lossMode{repeat, failedRetry}, func(t *testing.T, s *State, l checkpoint.Lease) checkpoint.State {
			if err := s.Release(t.Context(), cpJob, l); err != nil {
				t.Fatalf("Release: %v", err)
			}
			return checkpoint.State{Lease: checkpoint.Lease{Owner: l.Owner, Token: l.Token}}
		}},
		{"Commit", []lossMode{repeat, failedRetry}, func(t *testing.T, s *State, l checkpoint.Lease) checkpoint.State {
			u := checkpoint.Update{SetRecheck: &r0, Restated: &rs}
			if err := s.Commit(t.Context(), cpJob, l, cpNow.Add(time.Second), time.Time{}, cpNow.Add(-time.Hour), u); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			return checkpoint.State{Checkpoint: cpNow.Add(-time.Hour), Lease: l, Rechecks: []checkpoint.Recheck{r0},
				Restated: []checkpoint.Restatement{rs}}
		}},
		{"Update", []lossMode{repeat, failedRetry}, func(t *testing.T, s *State, l checkpoint.Lease) checkpoint.State {
			u := checkpoint.Update{SetRecheck: &r1, Restated: &rs}
			if err := s.Update(t.Context(), cpJob, l, cpNow.Add(time.Second), u); err != nil {
				t.Fatalf("Update: %v", err)
			}
			return checkpoint.State{Lease: l, Rechecks: []checkpoint.Recheck{r1}, Restated: []checkpoint.Restatement{rs}}
		}},
	}
	for _, tc := range tests {
		for _, mode := range tc.modes {
			t.Run(fmt.Sprintf("%s/%s", tc.name, map[lossMode]string{repeat: "repeat", failedRetry: "failedRetry"}[mode]), func(t *testing.T) {
				s, api := newLossyState(t, mode)
				l, err := s.Acquire(t.Context(), cpJob, "run-a", cpNow, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				api.arm(1)
				want := tc.run(t, s, l)
				sec := api.seconds()
				if len(sec) != 1 {
					t.Fatalf("%d responses lost, want 1", len(sec))
				}
				got := mustLoad(t, s, cpJob)
				if got.Lease.Owner != want.Lease.Owner || got.Lease.Token != want.Lease.Token ||
					!got.Lease.Expires.Equal(want.Lease.Expires) || !got.Checkpoint.Equal(want.Checkpoint) ||
					len(got.Rechecks) != len(want.Rechecks) || len(got.Restated) != len(want.Restated) {
					t.Errorf("stored state %+v,\nwant %+v", got, want)
				}
				t.Logf("the caller's SDK saw on retry: %v", sec[0])
			})
		}
	}
}

// A Commit whose retry fails its own condition is recognised from the
// item, not from luck: the retry's answer was a failed condition.
func TestLostCommitResponseIsConditionFailure(t *testing.T) {
	s, api := newLossyState(t, repeat)
	l, err := s.Acquire(t.Context(), cpJob, "run-a", cpNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	api.arm(1)
	if err := s.Commit(t.Context(), cpJob, l, cpNow, time.Time{}, cpNow, checkpoint.Update{}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if sec := api.seconds(); len(sec) != 1 || !isCCF(sec[0]) {
		t.Fatalf("the retry got %v, want a failed condition", sec)
	}
	// Genuine failures stay failures when their responses are lost.
	api.arm(1)
	err = s.Commit(t.Context(), cpJob, l, cpNow, cpNow.Add(-time.Hour), cpNow.Add(time.Hour), checkpoint.Update{})
	if !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("conflicting Commit: %v, want ErrConflict", err)
	}
	api.arm(1)
	err = s.Commit(t.Context(), cpJob, l, l.Expires, cpNow, cpNow.Add(time.Hour), checkpoint.Update{})
	if !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Commit at expiry: %v, want ErrLeaseLost", err)
	}
	if st := mustLoad(t, s, cpJob); !st.Checkpoint.Equal(cpNow) {
		t.Errorf("checkpoint %v, want %v", st.Checkpoint, cpNow)
	}
}

func putState(t *testing.T, s *State, item map[string]types.AttributeValue) {
	t.Helper()
	item[attr.Job] = attr.S(cpJob)
	_, err := testClient(t).PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
	if err != nil {
		t.Fatal(err)
	}
}

// An item written by the first version (no rechecks map, no restated
// list) is read, and its next holder can set rechecks.
func TestFirstVersionItem(t *testing.T) {
	s := newState(t, nil)
	putState(t, s, map[string]types.AttributeValue{
		attrCheckpoint: attr.Millis(cpNow.Add(-time.Hour)), attrLeaseOwner: attr.S("old-run"),
		attrLeaseToken: attr.N(7), attrLeaseExpires: attr.Millis(cpNow.Add(time.Minute)),
	})
	st := mustLoad(t, s, cpJob)
	if !st.Checkpoint.Equal(cpNow.Add(-time.Hour)) || st.Lease.Owner != "old-run" || st.Lease.Token != 7 ||
		st.Rechecks == nil || len(st.Rechecks) != 0 || len(st.Restated) != 0 {
		t.Fatalf("Load of a first-version item = %+v", st)
	}
	if _, err := s.Acquire(t.Context(), cpJob, "run-a", cpNow, time.Minute); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Fatalf("Acquire while the old run holds the lease: %v, want ErrLeaseHeld", err)
	}
	l, err := s.Acquire(t.Context(), cpJob, "run-a", cpNow.Add(time.Minute), time.Minute)
	if err != nil || l.Token != 8 {
		t.Fatalf("Acquire after expiry = %+v, %v; want token 8", l, err)
	}
	r := checkpoint.Recheck{Start: cpNow.Add(-2 * time.Hour), End: cpNow.Add(-time.Hour), Read: cpNow}
	if err := s.Commit(t.Context(), cpJob, l, cpNow.Add(time.Minute), cpNow.Add(-time.Hour), cpNow, checkpoint.Update{SetRecheck: &r}); err != nil {
		t.Fatalf("Commit with SetRecheck on a first-version item: %v", err)
	}
	if st := mustLoad(t, s, cpJob); len(st.Rechecks) != 1 || !st.Rechecks[0].Start.Equal(r.Start) {
		t.Errorf("rechecks %+v, want %+v", st.Rechecks, r)
	}
}

// A malformed item is an error that names the attribute and the value.
func TestBadStateItem(t *testing.T) {
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want []string
	}{
		{"recheck key", map[string]types.AttributeValue{attrRechecks: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"yesterday": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{fieldEnd: attr.N(1)}}}}},
			[]string{"rechecks", `"yesterday"`}},
		{"recheck end", map[string]types.AttributeValue{attrRechecks: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"1000": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{fieldEnd: attr.S("soon")}}}}},
			[]string{"rechecks.1000.end", "want N"}},
		{"restated type", map[string]types.AttributeValue{attrRestated: attr.S("x")}, []string{"restated", "want L"}},
		{"restated field", map[string]types.AttributeValue{attrRestated: &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{fieldStart: attr.N(1)}}}}},
			[]string{"restated[0].end", "missing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, nil)
			putState(t, s, tc.item)
			_, err := s.Load(t.Context(), cpJob)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Load: %v, want an error containing %q", err, w)
				}
			}
		})
	}
}

// Two writers under one lease record restatements at once: none is lost
// (the restated list is set conditionally on the list each one read).
func TestConcurrentRestatements(t *testing.T) {
	s := newState(t, nil)
	l, err := s.Acquire(t.Context(), cpJob, "run-a", cpNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 2, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				start := cpNow.Add(-time.Duration(w*each+i+1) * time.Hour)
				r := checkpoint.Restatement{Start: start, End: start.Add(time.Hour), Revision: 2, Reason: "recheck", At: cpNow}
				errs <- s.Update(t.Context(), cpJob, l, cpNow, checkpoint.Update{Restated: &r})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Update: %v", err)
		}
	}
	if st := mustLoad(t, s, cpJob); len(st.Restated) != writers*each {
		t.Errorf("%d restatements recorded, want %d: %+v", len(st.Restated), writers*each, st.Restated)
	}
}

package dynamodb

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// stallAPI leaves every batch request unprocessed on the first call, then
// blocks each later call until its context ends: the batch deadline falls
// in the middle of an attempt, as it does when the SDK is waiting out
// throttling or a slow server (the fault suite met it through a proxy).
type stallAPI struct {
	API   // nil: only the batch calls are used
	calls atomic.Int32
}

func (a *stallAPI) stall(ctx context.Context) error {
	if a.calls.Add(1) == 1 {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (a *stallAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := a.stall(ctx); err != nil {
		return nil, err
	}
	return &dynamodb.BatchWriteItemOutput{UnprocessedItems: in.RequestItems}, nil
}

func (a *stallAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if err := a.stall(ctx); err != nil {
		return nil, err
	}
	return &dynamodb.BatchGetItemOutput{UnprocessedKeys: in.RequestItems}, nil
}

// TestBatchDeadlineNamesCause: when the batch deadline cuts an attempt
// short, the error still says what kept the batch from finishing (items
// or keys left unprocessed), not only "context deadline exceeded".
func TestBatchDeadlineNamesCause(t *testing.T) {
	for _, tt := range []struct {
		name string
		call func(s *Store) error
		want string
	}{
		{"PutItems", func(s *Store) error { return s.PutItems(t.Context(), testItems(3)) }, "3 items unprocessed, then"},
		{"Lookup", func(s *Store) error {
			_, err := s.Lookup(t.Context(), "job", []string{"a", "b"})
			return err
		}, "2 keys unprocessed, then"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(&stallAPI{}, Options{Table: "data", StateTable: "state",
				WriteDeadline: 100 * time.Millisecond, RetryBase: time.Millisecond, RetryCap: 2 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.call(s)
			if err == nil {
				t.Fatal("no error, want one")
			}
			for _, want := range []string{"gave up after 100ms (2 attempts)", tt.want, "context deadline exceeded"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

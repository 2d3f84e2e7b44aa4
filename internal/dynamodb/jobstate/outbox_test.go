package jobstate

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/reportjob/reportjob/internal/outbox"
	"github.com/reportjob/reportjob/internal/storetest/outboxtest"
)

// The outbox suite against State alone.
func TestOutboxConformance(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T) outboxtest.Store { return newState(t, nil) })
}

// noTransactions is a server without TransactWriteItems (dynalite): the
// outbox's writes go one by one, the lease's check first.
type noTransactions struct{ API }

func (noTransactions) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "UnknownOperationException", Message: "no transactions here"}
}

func TestOutboxConformanceWithoutTransactions(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T) outboxtest.Store { return newState(t, noTransactions{testClient(t)}) })
}

// TestOutboxReadsEarlierTables: an outbox written before the index
// buckets (one "pending" set in the outbox item, one "ids" set per month)
// is read as it is; a sent entry leaves that set too, and a new entry goes
// to the buckets beside it.
func TestOutboxReadsEarlierTables(t *testing.T) {
	s := newState(t, nil)
	ctx := t.Context()
	t0 := time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)
	l, err := s.Acquire(ctx, "j", "me", t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	put := func(it map[string]types.AttributeValue) {
		t.Helper()
		if _, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		put(entryItem("j", outbox.Entry{ID: id, Kind: outbox.KindEvent, Target: "ep", At: t0, Payload: []byte(`{"id":"` + id + `"}`)}))
	}
	root := outboxKey("j", "")
	root["pending"], root["months"] = ss("a", "b"), ss("2026-04")
	put(root)
	month := outboxKey("j", "#m#2026-04")
	month["ids"] = ss("a", "b")
	put(month)

	pending := func(want ...string) {
		t.Helper()
		p, err := s.Pending(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		got := p
		if !slices.Equal(got, want) {
			t.Fatalf("Pending %v, want %v", got, want)
		}
	}
	pending("a", "b")
	if err := s.Record(ctx, "j", l, t0, outbox.Entry{ID: "a", Kind: outbox.KindEvent, At: t0}.Delivered(t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, "j", l, t0, []outbox.Entry{{ID: "c", Kind: outbox.KindEvent, Target: "ep", At: t0}}); err != nil {
		t.Fatal(err)
	}
	pending("b", "c")
	it, err := s.getItem(ctx, outboxKey("j", ""))
	if err != nil || !slices.Equal(setOf(it["pending"]), []string{"b"}) {
		t.Fatalf("the earlier pending set after a was sent: %v, %v", setOf(it["pending"]), err)
	}
	all, err := s.Since(ctx, "j", t0)
	if err != nil || len(all) != 3 || all[0].ID != "a" || all[0].Sent.IsZero() || string(all[1].Payload) != `{"id":"b"}` {
		t.Fatalf("Since: %+v, %v", all, err)
	}
}

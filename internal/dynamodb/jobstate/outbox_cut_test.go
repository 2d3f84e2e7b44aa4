package jobstate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
	"github.com/reportjob/reportjob/internal/outbox"
)

// dieAfter is a server without transactions whose client process dies
// after n writes: every later write fails.
type dieAfter struct {
	noTransactions
	n *atomic.Int64
}

var errDied = errors.New("the process died")

func (d dieAfter) write() error {
	if d.n.Add(-1) < 0 {
		return errDied
	}
	return nil
}

func (d dieAfter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := d.write(); err != nil {
		return nil, err
	}
	return d.noTransactions.UpdateItem(ctx, in, o...)
}

func (d dieAfter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := d.write(); err != nil {
		return nil, err
	}
	return d.noTransactions.PutItem(ctx, in, o...)
}

// TestOutboxEnqueueCutShortWithoutTransactions: on a server without
// transactions (dynalite) an Enqueue's writes go one by one; a process
// that dies after any of them leaves an outbox that the next Enqueue of
// the same entries completes: each is pending and read by Since, none is
// lost.
func TestOutboxEnqueueCutShortWithoutTransactions(t *testing.T) {
	client := testClient(t)
	table := ddbtest.StateTable(t)
	healthy := New(client, table)
	t0 := time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)
	es := []outbox.Entry{
		{ID: "mail/2026-03/acme/1", Kind: outbox.KindMail, Target: "acme", At: t0, Payload: []byte(`{}`)},
		{ID: "mail/2026-03/beta/1", Kind: outbox.KindMail, Target: "beta", At: t0, Payload: []byte(`{}`)},
		{ID: "event/evt_1/ep-1", Kind: outbox.KindEvent, Target: "ep-1", At: t0, Payload: []byte(`{}`)},
	}
	for k := 1; k <= 12; k++ {
		job := fmt.Sprintf("j%d", k)
		l, err := healthy.Acquire(t.Context(), job, "me", t0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		n := &atomic.Int64{}
		n.Store(int64(k))
		cut := New(dieAfter{noTransactions{client}, n}, table)
		_, cutErr := cut.Enqueue(t.Context(), job, l, t0, es)
		if _, err := healthy.Enqueue(t.Context(), job, l, t0, es); err != nil {
			t.Fatal(err)
		}
		p, err := healthy.Pending(t.Context(), job)
		if err != nil {
			t.Fatal(err)
		}
		all, err := healthy.Since(t.Context(), job, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != len(es) || len(all) != len(es) {
			var got []string
			for _, e := range all {
				got = append(got, e.ID)
			}
			t.Errorf("died after %d writes (%v), then enqueued again: pending %v, Since %v; want all %d", k, cutErr, p, got, len(es))
		}
	}
}

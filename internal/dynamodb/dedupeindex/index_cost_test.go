package dedupeindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// meterAPI asks for ReturnConsumedCapacity TOTAL on the index's calls and
// counts requests and capacity units per operation.
type meterAPI struct {
	clientAPI
	mu    sync.Mutex
	calls map[string]int
	units map[string]float64
}

func newMeter(api clientAPI) *meterAPI {
	return &meterAPI{clientAPI: api, calls: map[string]int{}, units: map[string]float64{}}
}

func (m *meterAPI) add(op string, cc ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[op]++
	for _, c := range cc {
		m.units[op] += aws.ToFloat64(c.CapacityUnits)
	}
}

// take returns and resets the counts, as "op: n requests, u units" lines.
func (m *meterAPI) take() (calls map[string]int, units map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	calls, units = m.calls, m.units
	m.calls, m.units = map[string]int{}, map[string]float64{}
	return calls, units
}

func (m *meterAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.clientAPI.BatchGetItem(ctx, &c, opts...)
	if err == nil {
		m.add("BatchGetItem", out.ConsumedCapacity...)
	}
	return out, err
}

func (m *meterAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.clientAPI.BatchWriteItem(ctx, &c, opts...)
	if err == nil {
		m.add("BatchWriteItem", out.ConsumedCapacity...)
	}
	return out, err
}

func (m *meterAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.clientAPI.GetItem(ctx, &c, opts...)
	if err == nil && out.ConsumedCapacity != nil {
		m.add("GetItem", *out.ConsumedCapacity)
	}
	return out, err
}

func (m *meterAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.clientAPI.PutItem(ctx, &c, opts...)
	if err == nil && out.ConsumedCapacity != nil {
		m.add("PutItem", *out.ConsumedCapacity)
	}
	return out, err
}

func (m *meterAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.clientAPI.UpdateItem(ctx, &c, opts...)
	if err == nil && out.ConsumedCapacity != nil {
		m.add("UpdateItem", *out.ConsumedCapacity)
	}
	return out, err
}

func (m *meterAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.clientAPI.DeleteItem(ctx, &c, opts...)
	if err == nil && out.ConsumedCapacity != nil {
		m.add("DeleteItem", *out.ConsumedCapacity)
	}
	return out, err
}

// ixUUIDs returns n ascending random UUID-like ids, the hardest common
// case for compression.
func ixUUIDs(n int) []string {
	r := rand.New(rand.NewPCG(7, 7))
	ids := make([]string, n)
	for i := range ids {
		a, b := r.Uint64(), r.Uint64()
		ids[i] = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	}
	slices.Sort(ids)
	return ids
}

// TestIndexCost measures, against DynamoDB Local, the requests and
// consumed capacity of 1,000 Lookups, 1,000 Adds and a Commit of a
// 100,000-id list, and checks the request counts. Run it with -v to see
// the numbers.
func TestIndexCost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	m := newMeter(testClient(t))
	s := newIndex(t, m)
	m.take()
	report := func(what string, wantCalls map[string]int) {
		t.Helper()
		calls, units := m.take()
		for _, op := range slices.Sorted(func(yield func(string) bool) {
			for op := range calls {
				if !yield(op) {
					return
				}
			}
		}) {
			t.Logf("%-32s %-15s %5d requests %10.1f capacity units", what, op, calls[op], units[op])
		}
		for op, n := range wantCalls {
			if calls[op] != n {
				t.Errorf("%s: %d %s requests, want %d", what, calls[op], op, n)
			}
		}
	}

	ids := ixUUIDs(1000)
	w, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	report("NewClaimWriter", map[string]int{"UpdateItem": 1})
	for _, id := range ids {
		if err := w.Add(id, indextest.FP(id, 0), true); err != nil {
			t.Fatal(err)
		}
	}
	// The claims wait for the chunk that lists their ids: the last one,
	// written by Commit.
	report("1,000 Adds (write=true)", map[string]int{})
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	report("Commit of 1,000 ids", map[string]int{"PutItem": 1, "BatchWriteItem": 40, "UpdateItem": 1})

	for batch := range slices.Chunk(ids, collect.MaxLookup) {
		if claims, err := s.Lookup(t.Context(), ixJob, batch); err != nil || len(claims) != len(batch) {
			t.Fatalf("Lookup = %d claims, %v", len(claims), err)
		}
	}
	report("1,000 Lookups (found)", map[string]int{"BatchGetItem": 10})
	for batch := range slices.Chunk(ixUUIDs(1001)[1:], collect.MaxLookup) {
		if _, err := s.Lookup(t.Context(), "other-job", batch); err != nil {
			t.Fatal(err)
		}
	}
	report("1,000 Lookups (not found)", map[string]int{"BatchGetItem": 10})

	for _, tc := range []struct {
		name string
		ids  []string
	}{{"UUIDs", ixUUIDs(100_000)}, {"tx-%06d", ixSeqIDs(100_000)}} {
		w, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
		if err != nil {
			t.Fatal(err)
		}
		m.take()
		for _, id := range tc.ids {
			if err := w.Add(id, indextest.FP(id, 0), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		h := ixHead(t, s)
		m.take()
		t.Logf("100,000 %s ids: %d chunks", tc.name, h.chunks)
		// Measured again, alone: a Commit replacing the list with itself
		// (chunks, head, deletion of the previous chunks).
		w, err = s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
		if err != nil {
			t.Fatal(err)
		}
		m.take()
		for _, id := range tc.ids {
			if err := w.Add(id, indextest.FP(id, 0), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		batches := int(h.chunks+batch.Size-1) / batch.Size
		report("Commit of 100,000 "+tc.name, map[string]int{"PutItem": int(h.chunks), "UpdateItem": 1, "BatchWriteItem": batches})
		n := 0
		for _, err := range s.PeriodIDs(t.Context(), ixJob, ixP0) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != len(tc.ids) {
			t.Fatalf("PeriodIDs yielded %d ids, want %d", n, len(tc.ids))
		}
		report("PeriodIDs of 100,000 "+tc.name, map[string]int{"GetItem": 1 + int(h.chunks)})
	}
}

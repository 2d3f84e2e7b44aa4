package main

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	rjddb "github.com/reportjob/reportjob/internal/dynamodb"
)

// opCount is what one kind of request on one table cost.
type opCount struct {
	Requests int64 `json:"requests"`
	// Items: returned by Query and Scan (Scan: also Scanned), requested
	// by BatchGetItem, written or deleted by BatchWriteItem.
	Items   int64 `json:"items"`
	Scanned int64 `json:"scanned,omitempty"`
	// Capacity is the consumed capacity DynamoDB reported (read or write
	// units, ReturnConsumedCapacity TOTAL, which counting sets on every
	// request that takes it).
	Capacity float64 `json:"capacity_units"`
}

// counting is the store's DynamoDB API with every request counted by
// operation and table: "Query billing", "BatchGetItem state"...
type counting struct {
	api *awsddb.Client
	// roles names tables in the counts ("data", "state").
	roles map[string]string
	// period are the partition keys of the benchmark period: Queries of
	// them count as "Query data period" as well as "Query data".
	period map[string]bool

	mu     sync.Mutex
	counts map[string]*opCount
}

var _ rjddb.API = (*counting)(nil)

func newCounting(api *awsddb.Client, roles map[string]string, period []string) *counting {
	c := &counting{api: api, roles: roles, period: map[string]bool{}, counts: map[string]*opCount{}}
	for _, pk := range period {
		c.period[pk] = true
	}
	return c
}

// reset returns the counts so far and starts again from zero.
func (c *counting) reset() map[string]opCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]opCount, len(c.counts))
	for k, v := range c.counts {
		out[k] = *v
	}
	clear(c.counts)
	return out
}

func (c *counting) add(op, table string, items, scanned int64, cc ...types.ConsumedCapacity) {
	role := c.roles[table]
	if role == "" {
		role = table
	}
	c.addKey(op+" "+role, items, scanned, cc...)
}

func (c *counting) addKey(k string, items, scanned int64, cc ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.counts[k]
	if v == nil {
		v = &opCount{}
		c.counts[k] = v
	}
	v.Requests++
	v.Items += items
	v.Scanned += scanned
	for _, x := range cc {
		v.Capacity += aws.ToFloat64(x.CapacityUnits)
	}
}

// sumCounts adds up the counts whose key matches keep.
func sumCounts(m map[string]opCount, keep func(op, role string) bool) opCount {
	var s opCount
	for _, k := range slices.Sorted(maps.Keys(m)) {
		op, role, _ := cut(k)
		if keep(op, role) {
			v := m[k]
			s.Requests += v.Requests
			s.Items += v.Items
			s.Scanned += v.Scanned
			s.Capacity += v.Capacity
		}
	}
	return s
}

func cut(k string) (op, role string, ok bool) {
	for i := range k {
		if k[i] == ' ' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

const total = types.ReturnConsumedCapacityTotal

func (c *counting) Query(ctx context.Context, in *awsddb.QueryInput, o ...func(*awsddb.Options)) (*awsddb.QueryOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.Query(ctx, &q, o...)
	if err == nil {
		c.add("Query", aws.ToString(in.TableName), int64(out.Count), int64(out.ScannedCount), deref(out.ConsumedCapacity)...)
		if pk, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS); ok && c.period[pk.Value] {
			c.addKey("Query data period", int64(out.Count), int64(out.ScannedCount), deref(out.ConsumedCapacity)...)
		}
	}
	return out, err
}

// Scan is the baseline's read, not the store's.
func (c *counting) Scan(ctx context.Context, in *awsddb.ScanInput, o ...func(*awsddb.Options)) (*awsddb.ScanOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.Scan(ctx, &q, o...)
	if err == nil {
		c.add("Scan", aws.ToString(in.TableName), int64(out.Count), int64(out.ScannedCount), deref(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *counting) BatchWriteItem(ctx context.Context, in *awsddb.BatchWriteItemInput, o ...func(*awsddb.Options)) (*awsddb.BatchWriteItemOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.BatchWriteItem(ctx, &q, o...)
	if err == nil {
		for table, reqs := range in.RequestItems {
			var cc []types.ConsumedCapacity
			for _, x := range out.ConsumedCapacity {
				if aws.ToString(x.TableName) == table {
					cc = append(cc, x)
				}
			}
			c.add("BatchWriteItem", table, int64(len(reqs)-len(out.UnprocessedItems[table])), 0, cc...)
		}
	}
	return out, err
}

func (c *counting) BatchGetItem(ctx context.Context, in *awsddb.BatchGetItemInput, o ...func(*awsddb.Options)) (*awsddb.BatchGetItemOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.BatchGetItem(ctx, &q, o...)
	if err == nil {
		for table, ka := range in.RequestItems {
			var cc []types.ConsumedCapacity
			for _, x := range out.ConsumedCapacity {
				if aws.ToString(x.TableName) == table {
					cc = append(cc, x)
				}
			}
			c.add("BatchGetItem", table, int64(len(ka.Keys)), 0, cc...)
		}
	}
	return out, err
}

func (c *counting) GetItem(ctx context.Context, in *awsddb.GetItemInput, o ...func(*awsddb.Options)) (*awsddb.GetItemOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.GetItem(ctx, &q, o...)
	if err == nil {
		c.add("GetItem", aws.ToString(in.TableName), 1, 0, deref(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *counting) PutItem(ctx context.Context, in *awsddb.PutItemInput, o ...func(*awsddb.Options)) (*awsddb.PutItemOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.PutItem(ctx, &q, o...)
	if err == nil {
		c.add("PutItem", aws.ToString(in.TableName), 1, 0, deref(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *counting) UpdateItem(ctx context.Context, in *awsddb.UpdateItemInput, o ...func(*awsddb.Options)) (*awsddb.UpdateItemOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.UpdateItem(ctx, &q, o...)
	if err == nil {
		c.add("UpdateItem", aws.ToString(in.TableName), 1, 0, deref(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *counting) TransactWriteItems(ctx context.Context, in *awsddb.TransactWriteItemsInput, o ...func(*awsddb.Options)) (*awsddb.TransactWriteItemsOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.TransactWriteItems(ctx, &q, o...)
	if err == nil {
		tables := map[string]int64{}
		for _, it := range in.TransactItems {
			switch {
			case it.Update != nil:
				tables[aws.ToString(it.Update.TableName)]++
			case it.Put != nil:
				tables[aws.ToString(it.Put.TableName)]++
			case it.Delete != nil:
				tables[aws.ToString(it.Delete.TableName)]++
			case it.ConditionCheck != nil:
				tables[aws.ToString(it.ConditionCheck.TableName)]++
			}
		}
		for table, n := range tables {
			var cc []types.ConsumedCapacity
			for _, x := range out.ConsumedCapacity {
				if aws.ToString(x.TableName) == table {
					cc = append(cc, x)
				}
			}
			c.add("TransactWriteItems", table, n, 0, cc...)
		}
	}
	return out, err
}

func (c *counting) DeleteItem(ctx context.Context, in *awsddb.DeleteItemInput, o ...func(*awsddb.Options)) (*awsddb.DeleteItemOutput, error) {
	q := *in
	q.ReturnConsumedCapacity = total
	out, err := c.api.DeleteItem(ctx, &q, o...)
	if err == nil {
		c.add("DeleteItem", aws.ToString(in.TableName), 1, 0, deref(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *counting) CreateTable(ctx context.Context, in *awsddb.CreateTableInput, o ...func(*awsddb.Options)) (*awsddb.CreateTableOutput, error) {
	return c.api.CreateTable(ctx, in, o...)
}

func (c *counting) DescribeTable(ctx context.Context, in *awsddb.DescribeTableInput, o ...func(*awsddb.Options)) (*awsddb.DescribeTableOutput, error) {
	return c.api.DescribeTable(ctx, in, o...)
}

func (c *counting) UpdateTimeToLive(ctx context.Context, in *awsddb.UpdateTimeToLiveInput, o ...func(*awsddb.Options)) (*awsddb.UpdateTimeToLiveOutput, error) {
	return c.api.UpdateTimeToLive(ctx, in, o...)
}

func (c *counting) DescribeTimeToLive(ctx context.Context, in *awsddb.DescribeTimeToLiveInput, o ...func(*awsddb.Options)) (*awsddb.DescribeTimeToLiveOutput, error) {
	return c.api.DescribeTimeToLive(ctx, in, o...)
}

func deref(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

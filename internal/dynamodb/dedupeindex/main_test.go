package dedupeindex

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/testenv"
)

func TestMain(m *testing.M) {
	// DynamoDB Local accepts any credentials, but the SDK's default chain
	// must find some.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":     "rjtest",
		"AWS_SECRET_ACCESS_KEY": "rjtest",
	} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	os.Exit(m.Run())
}

// clientAPI is what the tests' fault injectors wrap: the index's calls and
// the batch writes.
type clientAPI interface {
	API
	batch.API
}

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
	// runID keeps table names of this process apart from those of earlier
	// runs against the same in-memory server.
	runID    = strconv.FormatInt(time.Now().UnixNano()%1e10, 36)
	tableSeq atomic.Int64
)

// testClient returns a client of DynamoDB Local, or skips the test. Like
// dynamodb.NewClient with an endpoint, it does not validate response
// checksums (DynamoDB Local omits them on errors).
func testClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	endpoint := testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
	clientOnce.Do(func() {
		cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"))
		if err != nil {
			clientErr = err
			return
		}
		client = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(endpoint)
			o.DisableValidateResponseChecksum = true
		})
	})
	if clientErr != nil {
		t.Fatalf("client: %v", clientErr)
	}
	return client
}

// newIndex returns an Index on a fresh state table (HASH job S) over api
// (the real client when nil), with its batch.Retrier as dynamodb.New sets
// it up by default, then changed by opts.
func newIndex(t testing.TB, api clientAPI, opts ...func(*batch.Retrier)) *Index {
	t.Helper()
	c := testClient(t)
	if api == nil {
		api = c
	}
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	table := fmt.Sprintf("rj_%s_%08x_%d_state", runID, h.Sum32(), tableSeq.Add(1))
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrJob), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrJob), AttributeType: types.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	t.Cleanup(func() {
		_, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		var nf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			t.Errorf("delete table %s: %v", table, err)
		}
	})
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 100*time.Millisecond
	})
	if err := w.Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute); err != nil {
		t.Fatalf("wait for table %s: %v", table, err)
	}
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
	var table string
	var reqs []types.WriteRequest
	for t, r := range in.RequestItems {
		table, reqs = t, r
	}
	write, unprocessed, err := f.batch(call, reqs)
	if err != nil {
		return nil, err
	}
	if len(write) > 0 {
		out, err := f.clientAPI.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: write}}, opts...)
		if err != nil {
			return nil, err
		}
		if len(out.UnprocessedItems) > 0 {
			return nil, fmt.Errorf("real server left items unprocessed: %v", out.UnprocessedItems)
		}
	}
	out := &dynamodb.BatchWriteItemOutput{}
	if len(unprocessed) > 0 {
		out.UnprocessedItems = map[string][]types.WriteRequest{table: unprocessed}
	}
	return out, nil
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

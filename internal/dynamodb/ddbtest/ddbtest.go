// Package ddbtest gives the DynamoDB store's tests a client of DynamoDB
// Local and fresh tables in it. The server comes from the test scripts
// (testenv.EnvDynamoDB); without it a test skips, or fails under CI.
package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/testenv"
)

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
	// runID keeps table names of this process apart from those of earlier
	// runs against the same in-memory server.
	runID    = strconv.FormatInt(time.Now().UnixNano()%1e10, 36)
	tableSeq atomic.Int64
)

// Client returns a client of DynamoDB Local, or skips the test. DynamoDB
// Local accepts any credentials; like dynamodb.NewClient with an endpoint,
// the client does not validate response checksums (DynamoDB Local omits
// them on errors).
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	endpoint := testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
	clientOnce.Do(func() {
		cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("rjtest", "rjtest", "")))
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

// StateTable creates a fresh state table (HASH attr.Job S, as
// dynamodb.Store.Init creates it), waits until it is active, deletes it
// when the test ends, and returns its name.
func StateTable(t testing.TB) string {
	t.Helper()
	c := Client(t)
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	table := fmt.Sprintf("rj_%s_%08x_%d_state", runID, h.Sum32(), tableSeq.Add(1))
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attr.Job), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attr.Job), AttributeType: types.ScalarAttributeTypeS}},
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
	return table
}

// BatchWriter is the call InjectBatchWrite wraps.
type BatchWriter interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// InjectBatchWrite is BatchWriteItem of in (one table) with a fault
// decided by decide: the requests it returns in write are sent to next
// (the real server, which must process them all), those in unprocessed
// come back as UnprocessedItems, and an error is returned as is.
func InjectBatchWrite(ctx context.Context, next BatchWriter, in *dynamodb.BatchWriteItemInput, opts []func(*dynamodb.Options),
	decide func(reqs []types.WriteRequest) (write, unprocessed []types.WriteRequest, err error)) (*dynamodb.BatchWriteItemOutput, error) {
	var table string
	var reqs []types.WriteRequest
	for t, r := range in.RequestItems {
		table, reqs = t, r
	}
	write, unprocessed, err := decide(reqs)
	if err != nil {
		return nil, err
	}
	if len(write) > 0 {
		out, err := next.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: write}}, opts...)
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

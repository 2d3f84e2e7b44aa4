package jobstate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/storetest/checkpointtest"
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

// newState returns a State on a fresh state table (HASH job S, as
// dynamodb.Store.Init creates it) over api (the real client when nil).
func newState(t testing.TB, api API) *State {
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
	return New(api, table)
}

// The job state suite against State alone (dynamodb's TestConformance
// runs it through the Store that embeds it).
func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
		return newState(t, nil)
	})
}

// noOldItem is a server that ignores ReturnValuesOnConditionCheckFailure
// (as dynalite does): the state must read the item itself.
type noOldItem struct{ API }

func (a noOldItem) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.API.UpdateItem(ctx, in, opts...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

func TestConformanceWithoutOldItem(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
		return newState(t, noOldItem{testClient(t)})
	})
}

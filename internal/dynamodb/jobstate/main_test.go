package jobstate

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
	"github.com/reportjob/reportjob/internal/storetest/checkpointtest"
)

// testClient returns a client of DynamoDB Local, or skips the test.
func testClient(t testing.TB) *dynamodb.Client { return ddbtest.Client(t) }

// newState returns a State on a fresh state table (HASH job S, as
// dynamodb.Store.Init creates it) over api (the real client when nil).
func newState(t testing.TB, api API) *State {
	t.Helper()
	if api == nil {
		api = testClient(t)
	}
	return New(api, ddbtest.StateTable(t))
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

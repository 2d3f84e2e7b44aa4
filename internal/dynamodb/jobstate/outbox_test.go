package jobstate

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

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

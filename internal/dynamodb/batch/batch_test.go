package batch

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&types.ProvisionedThroughputExceededException{}, true},
		{&types.RequestLimitExceeded{}, true},
		{&smithy.GenericAPIError{Code: "ThrottlingException"}, true},
		{&types.InternalServerError{}, true},
		{&smithy.OperationError{OperationName: "BatchWriteItem", Err: &types.ProvisionedThroughputExceededException{}}, true},
		{&smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 500}}, Err: errors.New("x")}, true},
		{&smithy.GenericAPIError{Code: "ValidationException"}, false},
		{&types.ResourceNotFoundException{}, false},
		{&smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 400}}, Err: errors.New("x")}, false},
		{context.Canceled, false},
	}
	for _, tc := range tests {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%T %v) = %v, want %v", tc.err, tc.err, got, tc.want)
		}
	}
}

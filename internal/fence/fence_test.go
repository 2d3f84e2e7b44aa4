package fence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

type checker struct{ err error }

func (c *checker) Check() error { return c.err }

var errLost = errors.New("lease lost")

// TestClient: a write whose context's Checker fails never reaches the
// server; reads and unfenced contexts pass.
func TestClient(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := testClient(srv)
	ok, lost := &checker{}, &checker{err: errLost}
	for _, tc := range []struct {
		method  string
		checker Checker
		sent    bool
	}{
		{http.MethodPut, nil, true},
		{http.MethodPut, ok, true},
		{http.MethodPut, lost, false},
		{http.MethodDelete, lost, false},
		{http.MethodPost, lost, false},
		{http.MethodGet, lost, true},
		{http.MethodHead, lost, true},
	} {
		ctx := context.Background()
		if tc.checker != nil {
			ctx = WithContext(ctx, tc.checker)
		}
		before := hits.Load()
		req, _ := http.NewRequestWithContext(ctx, tc.method, srv.URL, nil)
		resp, err := c.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		sent := hits.Load() > before
		if sent != tc.sent {
			t.Errorf("%s with %v: sent %v, want %v", tc.method, tc.checker, sent, tc.sent)
		}
		var fe *Error
		if !tc.sent && (!errors.As(err, &fe) || !errors.Is(err, errLost) || fe.RetryableError()) {
			t.Errorf("%s refused: err %v, want a non-retryable *Error wrapping the Checker's", tc.method, err)
		}
	}
}

// TestClientUnfencedTransport: a fenced write through a transport that
// fence.Transport did not prepare fails, and never reaches the server.
func TestClientUnfencedTransport(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := Client{Inner: srv.Client(), IsWrite: S3Write}
	req, _ := http.NewRequestWithContext(WithContext(context.Background(), &checker{}), http.MethodPut, srv.URL, nil)
	resp, err := c.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrUnfenced) || hits.Load() != 0 {
		t.Errorf("fenced PUT over an unfenced transport: err %v, %d requests at the server; want ErrUnfenced and none", err, hits.Load())
	}
	get(t, c, srv.URL) // reads pass
}

func TestDynamoDBWrite(t *testing.T) {
	for target, want := range map[string]bool{
		"DynamoDB_20120810.PutItem": true, "DynamoDB_20120810.BatchWriteItem": true, "DynamoDB_20120810.UpdateItem": true,
		"DynamoDB_20120810.DeleteItem": true, "DynamoDB_20120810.Query": false, "DynamoDB_20120810.BatchGetItem": false,
		"DynamoDB_20120810.GetItem": false, "": false,
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
		r.Header.Set("X-Amz-Target", target)
		if got := DynamoDBWrite(r); got != want {
			t.Errorf("%q: %v, want %v", target, got, want)
		}
	}
}

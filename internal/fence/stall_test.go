package fence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// flip is a Checker that passes until lost is set.
type flip struct{ lost atomic.Bool }

func (f *flip) Check() error {
	if f.lost.Load() {
		return errLost
	}
	return nil
}

// TestClientStalledAfterCheck: a run that stalls (SIGSTOP, a suspended VM,
// a long wait for a connection) after a write request passed its first
// fence check, and resumes past its lease, must not send it. The stall is
// simulated where it hurts: right after Client.Do's check, before the
// transport writes the request. The server counts every request that
// reached it whole; none may.
func TestClientStalledAfterCheck(t *testing.T) {
	var whole atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err == nil {
			whole.Add(1)
		}
	})
	for _, srv := range []*httptest.Server{httptest.NewServer(handler), httptest.NewTLSServer(handler)} {
		defer srv.Close()
		c := testClient(srv)
		f := &flip{}
		defer func(a, b func(*http.Request)) { afterCheck, beforeSocket = a, b }(afterCheck, beforeSocket)
		expire := func(*http.Request) { f.lost.Store(true) } // the lease expires during the stall
		for _, stall := range []string{"after Do's check", "before the socket"} {
			afterCheck, beforeSocket = expire, func(*http.Request) {}
			if stall == "before the socket" {
				afterCheck, beforeSocket = beforeSocket, afterCheck
			}
			for _, tc := range []struct {
				name, method, body string
			}{
				{"BatchWriteItem-like POST", http.MethodPost, `{"RequestItems":{}}`},
				{"DELETE without a body", http.MethodDelete, ""},
				{"PUT of 1 MiB", http.MethodPut, strings.Repeat("x", 1<<20)},
			} {
				// Once on a new connection, once on a reused one.
				for round := range 2 {
					f.lost.Store(false)
					// A read first, so that round 1 reuses its connection.
					get(t, c, srv.URL)
					before := whole.Load()
					ctx := WithContext(context.Background(), f)
					req, _ := http.NewRequestWithContext(ctx, tc.method, srv.URL, strings.NewReader(tc.body))
					if tc.body == "" {
						req.Body, req.ContentLength = nil, 0
					}
					resp, err := c.Do(req)
					if resp != nil {
						resp.Body.Close()
					}
					if n := whole.Load() - before; n != 0 {
						t.Errorf("%s %s round %d, stalled %s: the server got the request whole (%d) after the lease expired (err %v)",
							srv.URL[:5], tc.name, round, stall, n, err)
					}
					var fe *Error
					if !errors.As(err, &fe) || !errors.Is(err, errLost) || fe.RetryableError() {
						t.Errorf("%s %s round %d, stalled %s: err %v, want a non-retryable *Error wrapping the Checker's", srv.URL[:5], tc.name, round, stall, err)
					}
				}
			}
		}
		// A request without a Checker (aborting a multipart upload after the
		// lease is gone) still goes out, on a connection a fenced request
		// used before.
		afterCheck, beforeSocket = func(*http.Request) {}, func(*http.Request) {}
		before := whole.Load()
		req, _ := http.NewRequestWithContext(Without(WithContext(context.Background(), f)), http.MethodDelete, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("%s unfenced DELETE: %v", srv.URL[:5], err)
		} else {
			resp.Body.Close()
		}
		if whole.Load() == before {
			t.Errorf("%s unfenced DELETE did not reach the server", srv.URL[:5])
		}
	}
}

func get(t *testing.T, c Client, url string) {
	t.Helper()
	resp, err := c.Do(must(http.NewRequest(http.MethodGet, url, nil)))
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func must(r *http.Request, err error) *http.Request {
	if err != nil {
		panic(err)
	}
	return r
}

// testClient is a Client over srv's own client, as the AWS clients use it.
func testClient(srv *httptest.Server) Client {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	Transport(tr)
	return Client{Inner: &http.Client{Transport: tr}, IsWrite: S3Write}
}

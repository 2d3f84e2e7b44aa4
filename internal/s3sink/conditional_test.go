package s3sink

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

// TestPreconditionInjected: a 412 (as AWS gives it) is ErrPrecondition at
// once, not retried, and nothing is stored.
func TestPreconditionInjected(t *testing.T) {
	f := setupFault(t, false, func(op, _ string, _ int) *faultResponse {
		if op == "PutObject" {
			return &faultResponse{http.StatusPreconditionFailed, "PreconditionFailed"}
		}
		return nil
	}, Options{})
	for _, opts := range []sink.PutOptions{{IfNoneMatch: true}, {IfMatch: `"abc"`}} {
		_, err := f.b.PutBytes(context.Background(), "m", []byte("{}"), opts)
		if !errors.Is(err, sink.ErrPrecondition) {
			t.Fatalf("Put %+v answered 412 = %v, want ErrPrecondition", opts, err)
		}
	}
	if n := len(f.p.requests("PutObject")); n != 2 {
		t.Fatalf("proxy saw %d PutObject requests, want 2 (no retry)", n)
	}
	drivertest.RequireMissing(t, f.b, "m")
}

// TestConflictRetried: 409 ConditionalRequestConflict (another conditional
// write in flight) is retried; when it persists, ErrPrecondition.
func TestConflictRetried(t *testing.T) {
	for _, tt := range []struct {
		conflicts int
		ok        bool
	}{{2, true}, {conflictAttempts, false}} {
		f := setupFault(t, false, func(op, _ string, attempt int) *faultResponse {
			if op == "PutObject" && attempt <= tt.conflicts {
				return &faultResponse{http.StatusConflict, "ConditionalRequestConflict"}
			}
			return nil
		}, Options{})
		_, err := f.b.PutBytes(context.Background(), "m", []byte("{}"), sink.PutOptions{IfNoneMatch: true})
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, sink.ErrPrecondition)) {
			t.Fatalf("%d conflicts: Put = %v, want ok=%v or ErrPrecondition", tt.conflicts, err, tt.ok)
		}
		want := min(tt.conflicts+1, conflictAttempts)
		if n := len(f.p.requests("PutObject")); n != want {
			t.Fatalf("%d conflicts: proxy saw %d PutObject requests, want %d", tt.conflicts, n, want)
		}
		if tt.ok {
			drivertest.RequireContent(t, f.b, "m", []byte("{}"))
		} else {
			drivertest.RequireMissing(t, f.b, "m")
		}
	}
}

// TestLostResponse: the server applies a conditional put but its answer
// is lost (500); the SDK retries, and the retry's 412 is the put's own
// success, which Put finds by reading the object back.
func TestLostResponse(t *testing.T) { overHTTPAndHTTPS(t, testLostResponse) }

func testLostResponse(t *testing.T, useTLS bool) {
	var lose bool
	f := setupFault(t, useTLS, func(op, _ string, _ int) *faultResponse {
		if op == "PutObject" && lose {
			lose = false
			return faultLost
		}
		return nil
	}, Options{})
	ctx := context.Background()
	put := func(data string, opts sink.PutOptions) (sink.Attrs, error) {
		f.p.mu.Lock()
		lose = true
		f.p.mu.Unlock()
		return f.b.PutBytes(ctx, "m", []byte(data), opts)
	}
	v1, err := put("v1", sink.PutOptions{IfNoneMatch: true})
	if err != nil {
		t.Fatalf("IfNoneMatch Put whose answer was lost: %v", err)
	}
	drivertest.RequireContent(t, f.b, "m", []byte("v1"))
	v2, err := put("v2", sink.PutOptions{IfMatch: v1.ETag})
	if err != nil {
		t.Fatalf("IfMatch Put whose answer was lost: %v", err)
	}
	drivertest.RequireContent(t, f.b, "m", []byte("v2"))
	if st, err := f.b.Stat(ctx, "m"); err != nil || st.ETag != v2.ETag {
		t.Fatalf("Stat = %+v, %v; want the ETag Put returned, %q", st, err, v2.ETag)
	}
	// The retry of a put that really lost: the object is another's.
	if _, err := put("v3", sink.PutOptions{IfMatch: v1.ETag}); !errors.Is(err, sink.ErrPrecondition) {
		t.Fatalf("stale IfMatch Put whose answer was lost = %v, want ErrPrecondition", err)
	}
	if _, err := put("v3", sink.PutOptions{IfNoneMatch: true}); !errors.Is(err, sink.ErrPrecondition) {
		t.Fatalf("IfNoneMatch Put of an existing object whose answer was lost = %v, want ErrPrecondition", err)
	}
	drivertest.RequireContent(t, f.b, "m", []byte("v2"))
	lost := 0
	for _, r := range f.p.requests("PutObject") {
		if r.Status == http.StatusInternalServerError {
			lost++
		}
	}
	if lost != 4 {
		t.Fatalf("proxy lost %d answers, want 4", lost)
	}
}

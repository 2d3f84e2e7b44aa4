package s3sink

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/reportjob/reportjob/internal/fence"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

// tripFence is a lease check that fails once tripped.
type tripFence struct{ tripped atomic.Bool }

func (f *tripFence) Check() error {
	if f.tripped.Load() {
		return errors.New("lease lost")
	}
	return nil
}

// TestFenceTripsMidMultipart: the run's lease check starts failing while
// the parts of a multipart upload go out. Put fails with the fence's
// error, no later part is sent, and the upload is still aborted (an abort
// only discards data: it is not fenced), so no parts are left stored.
func TestFenceTripsMidMultipart(t *testing.T) {
	fc := &tripFence{}
	ctx := fence.WithContext(context.Background(), fc)
	f := setupFault(t, true, nil, Options{Concurrency: 1})
	f.p.onOp = func(op, part string) {
		if op == "UploadPart" && part == "2" {
			fc.tripped.Store(true)
		}
	}
	err := f.put(ctx, "k", drivertest.Bytes(4*MinPartSize, 7))
	var fe *fence.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Put error = %v, want a *fence.Error", err)
	}
	if n := len(f.p.requests("UploadPart")); n > 2 {
		t.Errorf("%d UploadPart requests reached the server, want at most 2 (none after the fence tripped)", n)
	}
	if len(f.p.requests("AbortMultipartUpload")) == 0 {
		t.Fatal("no AbortMultipartUpload was sent")
	}
	drivertest.RequireMissing(t, f.b, "k")
	f.requireNoUpload(t)
}

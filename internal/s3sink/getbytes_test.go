package s3sink

import (
	"context"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
	"github.com/reportjob/reportjob/internal/testenv"
)

func TestGetObjectBytes(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	bucket := newBucket(t, c)
	drivertest.MustPut(t, sink.New(newSink(t, c, Options{Bucket: bucket})), "dir/agencies.csv", []byte("agency_id,legal_name\n"))
	ctx := context.Background()
	if b, err := GetObjectBytes(ctx, c, bucket, "dir/agencies.csv", 100); err != nil || string(b) != "agency_id,legal_name\n" {
		t.Errorf("GetObjectBytes = %q, %v", b, err)
	}
	if _, err := GetObjectBytes(ctx, c, bucket, "dir/agencies.csv", 10); err == nil || !strings.Contains(err.Error(), "more than the 10") {
		t.Errorf("GetObjectBytes over max = %v", err)
	}
	if _, err := GetObjectBytes(ctx, c, bucket, "dir/none.csv", 100); err == nil {
		t.Error("GetObjectBytes of a missing object: no error")
	}
}

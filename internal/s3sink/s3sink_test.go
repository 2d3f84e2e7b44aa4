package s3sink

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
	"github.com/reportjob/reportjob/internal/testenv"
)

// newClient returns a client for srv at endpoint (srv.Endpoint when ""),
// with short retry back-offs so fault tests stay fast.
func newClient(t testing.TB, srv testenv.S3, endpoint string) *s3.Client {
	t.Helper()
	if endpoint == "" {
		endpoint = srv.Endpoint
	}
	c, err := NewClient(context.Background(), ClientConfig{
		Region:          "us-east-1",
		Endpoint:        endpoint,
		PathStyle:       true,
		CABundle:        srv.CAFile,
		AccessKeyID:     srv.AccessKey,
		SecretAccessKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s3.New(c.Options(), func(o *s3.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxBackoff = 20 * time.Millisecond
		})
	})
}

// newBucket creates a fresh bucket with a random name.
func newBucket(t testing.TB, c *s3.Client) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "rjtest-" + hex.EncodeToString(b[:])
	if err := EnsureBucket(context.Background(), c, name, "us-east-1"); err != nil {
		t.Fatal(err)
	}
	return name
}

func newSink(t testing.TB, c *s3.Client, opts Options) *Sink {
	t.Helper()
	s, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noUploads fails t if a multipart upload is in progress under d's prefix.
func noUploads(t *testing.T, d driver.Bucket) {
	t.Helper()
	s := d.(*Sink)
	if ids := listUploads(t, s.client, s.opts.Bucket); len(ids) != 0 {
		t.Fatalf("multipart uploads left in the bucket: %q", ids)
	}
}

func TestConformanceHTTP(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	drivertest.RunHooks(t, func(t *testing.T) driver.Bucket {
		return newSink(t, c, Options{Bucket: newBucket(t, c)})
	}, drivertest.Hooks{NoLeftovers: noUploads})
}

// TestConformanceHTTPS runs over TLS, where the SDK sends aws-chunked
// bodies with trailing checksums, as it does against AWS.
func TestConformanceHTTPS(t *testing.T) {
	srv := testenv.RequireS3TLS(t)
	c := newClient(t, srv, "")
	drivertest.RunHooks(t, func(t *testing.T) driver.Bucket {
		return newSink(t, c, Options{Bucket: newBucket(t, c), Prefix: "reports/billing", SSE: SSEAES256})
	}, drivertest.Hooks{NoLeftovers: noUploads})
}

// TestPrefixIsolation: a sink sees only the objects below its own prefix,
// not those of a sibling prefix that shares its first bytes.
func TestPrefixIsolation(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	bucket := newBucket(t, c)
	a := sink.New(newSink(t, c, Options{Bucket: bucket, Prefix: "a"}))
	ab := sink.New(newSink(t, c, Options{Bucket: bucket, Prefix: "ab"}))
	root := sink.New(newSink(t, c, Options{Bucket: bucket}))
	drivertest.MustPut(t, a, "x/1", []byte("in a"))
	drivertest.MustPut(t, ab, "x/1", []byte("in ab"))
	drivertest.MustPut(t, root, "a.txt", []byte("beside the prefix"))

	as, err := a.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Key != "x/1" || as[0].Size != 4 {
		t.Fatalf("sink a List = %+v, want only x/1 (4 bytes)", as)
	}
	drivertest.RequireContent(t, root, "ab/x/1", []byte("in ab"))
	if u := a.URL("x/1"); u != "s3://"+bucket+"/a/x/1" {
		t.Fatalf("URL = %q", u)
	}
	if u := root.URL("x/1"); u != "s3://"+bucket+"/x/1" {
		t.Fatalf("URL = %q", u)
	}
	as, err = root.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(drivertest.Keys(as), " "); got != "a.txt a/x/1 ab/x/1" {
		t.Fatalf("root List = %q", got)
	}
	if err := a.Delete(context.Background(), "x/1"); err != nil {
		t.Fatal(err)
	}
	drivertest.RequireContent(t, ab, "x/1", []byte("in ab"))
}

func TestNewOptions(t *testing.T) {
	c := s3.New(s3.Options{Region: "us-east-1"})
	tests := []struct {
		opts Options
		err  string // "" = valid
	}{
		{Options{Bucket: "b"}, ""},
		{Options{Bucket: "b", Prefix: "a/b", SSE: SSEKMS, KMSKeyID: "k", PartSize: 5 << 20, Concurrency: 1}, ""},
		{Options{}, "empty bucket"},
		{Options{Bucket: "b", Prefix: "/a"}, "prefix"},
		{Options{Bucket: "b", Prefix: "a/"}, "prefix"},
		{Options{Bucket: "b", Prefix: strings.Repeat("p", 513)}, "prefix"},
		{Options{Bucket: "b", SSE: "aes256"}, `sse "aes256"`},
		{Options{Bucket: "b", SSE: SSEAES256, KMSKeyID: "k"}, "kms_key_id"},
		{Options{Bucket: "b", PartSize: 1 << 20}, "part size 1048576"},
		{Options{Bucket: "b", Concurrency: -1}, "concurrency -1"},
	}
	for _, tt := range tests {
		s, err := New(c, tt.opts)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("New(%+v) = %v, want nil", tt.opts, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.opts, err, tt.err)
		case err == nil && (s.opts.PartSize < MinPartSize || s.opts.Concurrency < 1):
			t.Errorf("New(%+v) left defaults unset: %+v", tt.opts, s.opts)
		}
	}
	for _, tt := range []struct {
		prefix, url string
		max         int
	}{{"", "s3://b", 1024}, {"a/b", "s3://b/a/b", 1020}} {
		s, err := New(c, Options{Bucket: "b", Prefix: tt.prefix})
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != tt.url || s.MaxKeyLen() != tt.max || s.MaxSegmentLen() != tt.max {
			t.Errorf("prefix %q: String %q, MaxKeyLen %d, MaxSegmentLen %d; want %q, %d", tt.prefix, s, s.MaxKeyLen(), s.MaxSegmentLen(), tt.url, tt.max)
		}
	}
}

func TestEnsureBucketIdempotent(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	bucket := newBucket(t, c)
	b := sink.New(newSink(t, c, Options{Bucket: bucket}))
	drivertest.MustPut(t, b, "k", []byte("kept"))
	if err := EnsureBucket(context.Background(), c, bucket, "us-east-1"); err != nil {
		t.Fatalf("second EnsureBucket: %v", err)
	}
	drivertest.RequireContent(t, b, "k", []byte("kept"))
	if err := EnsureBucket(context.Background(), c, "Bad_Bucket", "us-east-1"); err == nil {
		t.Fatal("EnsureBucket(Bad_Bucket) = nil, want an error")
	}
}

// TestMissingBucket: a missing bucket is an error, not ErrNotFound (which
// would read as "not delivered yet"), for Get and Stat alike.
func TestMissingBucket(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	b := sink.New(newSink(t, c, Options{Bucket: "rjtest-no-such-bucket"}))
	ctx := context.Background()
	if _, _, err := b.Get(ctx, "k"); err == nil || errors.Is(err, sink.ErrNotFound) {
		t.Errorf("Get in a missing bucket = %v, want an error other than ErrNotFound", err)
	}
	if _, err := b.Stat(ctx, "k"); err == nil || errors.Is(err, sink.ErrNotFound) {
		t.Errorf("Stat in a missing bucket = %v, want an error other than ErrNotFound", err)
	}
	for _, opts := range []sink.PutOptions{{IfNoneMatch: true}, {IfMatch: `"x"`}} {
		if _, err := b.PutBytes(ctx, "k", []byte("x"), opts); err == nil || errors.Is(err, sink.ErrPrecondition) {
			t.Errorf("Put %+v in a missing bucket = %v, want an error other than ErrPrecondition", opts, err)
		}
	}
}

// TestThroughput writes and reads back a 64 MiB object over HTTP and HTTPS
// and logs the rates (go test -v -run Throughput).
func TestThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, tls := range []bool{false, true} {
		name := "HTTP"
		if tls {
			name = "HTTPS"
		}
		t.Run(name, func(t *testing.T) {
			srv := testenv.RequireS3(t)
			if tls {
				srv = testenv.RequireS3TLS(t)
			}
			c := newClient(t, srv, "")
			b := sink.New(newSink(t, c, Options{Bucket: newBucket(t, c)}))
			const size = 64 << 20
			data := drivertest.Bytes(size, 7)
			want := sha256.Sum256(data)
			path := filepath.Join(t.TempDir(), "big")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			if _, err := b.PutFile(context.Background(), "big", path, sink.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			up := time.Since(start)

			start = time.Now()
			r, _, err := b.Get(context.Background(), "big")
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			n, err := io.Copy(h, r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			down := time.Since(start)
			if n != size || [32]byte(h.Sum(nil)) != want {
				t.Fatalf("read back %d bytes with another sha256", n)
			}
			mb := float64(size) / (1 << 20)
			t.Logf("%s 64 MiB: upload %.1f MiB/s (%v), download %.1f MiB/s (%v)",
				name, mb/up.Seconds(), up.Round(time.Millisecond), mb/down.Seconds(), down.Round(time.Millisecond))
		})
	}
}

// listUploads returns the multipart uploads in progress in bucket.
func listUploads(t testing.TB, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	return ids
}

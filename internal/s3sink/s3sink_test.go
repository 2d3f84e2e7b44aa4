package s3sink

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/report/sinktest"
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

func TestConformanceHTTP(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	sinktest.Run(t, func(t *testing.T) report.Sink {
		return newSink(t, c, Options{Bucket: newBucket(t, c)})
	})
}

// TestConformanceHTTPS runs over TLS, where the SDK sends aws-chunked
// bodies with trailing checksums, as it does against AWS.
func TestConformanceHTTPS(t *testing.T) {
	srv := testenv.RequireS3TLS(t)
	c := newClient(t, srv, "")
	sinktest.Run(t, func(t *testing.T) report.Sink {
		return newSink(t, c, Options{Bucket: newBucket(t, c), Prefix: "reports/billing", SSE: SSEAES256})
	})
}

// TestPrefixIsolation: a sink sees only the objects below its own prefix,
// not those of a sibling prefix that shares its first bytes.
func TestPrefixIsolation(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	bucket := newBucket(t, c)
	a := newSink(t, c, Options{Bucket: bucket, Prefix: "a"})
	ab := newSink(t, c, Options{Bucket: bucket, Prefix: "ab"})
	root := newSink(t, c, Options{Bucket: bucket})
	sinktest.Put(t, a, "x/1", []byte("in a"))
	sinktest.Put(t, ab, "x/1", []byte("in ab"))
	sinktest.Put(t, root, "a.txt", []byte("beside the prefix"))

	infos, err := a.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != "x/1" || infos[0].Size != 4 {
		t.Fatalf("sink a List = %+v, want only x/1 (4 bytes)", infos)
	}
	if got := sinktest.Get(t, root, "ab/x/1"); string(got) != "in ab" {
		t.Fatalf("object key of sink ab's x/1: got %q", got)
	}
	if u := a.URL("x/1"); u != "s3://"+bucket+"/a/x/1" {
		t.Fatalf("URL = %q", u)
	}
	infos, err = root.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range infos {
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, " ") != "a.txt a/x/1 ab/x/1" {
		t.Fatalf("root List = %q", keys)
	}
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
}

func TestEnsureBucketIdempotent(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	bucket := newBucket(t, c)
	s := newSink(t, c, Options{Bucket: bucket})
	sinktest.Put(t, s, "k", []byte("kept"))
	if err := EnsureBucket(context.Background(), c, bucket, "us-east-1"); err != nil {
		t.Fatalf("second EnsureBucket: %v", err)
	}
	if got := sinktest.Get(t, s, "k"); string(got) != "kept" {
		t.Fatalf("after EnsureBucket Open = %q", got)
	}
	if err := EnsureBucket(context.Background(), c, "Bad_Bucket", "us-east-1"); err == nil {
		t.Fatal("EnsureBucket(Bad_Bucket) = nil, want an error")
	}
}

// TestOpenMissingBucket: a missing bucket is an error, not ErrNotFound
// (which would read as "not delivered yet").
func TestOpenMissingBucket(t *testing.T) {
	srv := testenv.RequireS3(t)
	c := newClient(t, srv, "")
	s := newSink(t, c, Options{Bucket: "rjtest-no-such-bucket"})
	_, err := s.Open(context.Background(), "k")
	if err == nil || errors.Is(err, report.ErrNotFound) {
		t.Fatalf("Open in a missing bucket = %v, want an error other than ErrNotFound", err)
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
			s := newSink(t, c, Options{Bucket: newBucket(t, c)})
			const size = 64 << 20
			data := sinktest.Bytes(size, 7)
			want := sha256.Sum256(data)

			start := time.Now()
			w, err := s.NewWriter(context.Background(), "big", "application/octet-stream")
			if err != nil {
				t.Fatal(err)
			}
			for rest := data; len(rest) > 0; rest = rest[min(len(rest), 256<<10):] {
				if _, err := w.Write(rest[:min(len(rest), 256<<10)]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			up := time.Since(start)

			start = time.Now()
			r, err := s.Open(context.Background(), "big")
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

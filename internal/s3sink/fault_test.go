package s3sink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
	"github.com/reportjob/reportjob/internal/testenv"
)

// Faults no emulator gives (503 SlowDown, a failing part, a corrupted
// body) are injected by a reverse proxy on 127.0.0.1 in front of versitygw.

// request is what the proxy saw of one request.
type request struct {
	Op     string // PutObject, UploadPart, CreateMultipartUpload, ...
	Part   string // UploadPart's partNumber
	Header http.Header
	Status int // the status the client got
}

// fault decides the fate of a request: nil passes it on; else the proxy
// answers with the returned error response, or, for faultCorrupt, passes
// on a corrupted body.
type fault func(op, part string, attempt int) *faultResponse

type faultResponse struct {
	Status int
	Code   string
}

var (
	// faultCorrupt passes the request on with one bit of its body flipped.
	faultCorrupt = &faultResponse{Status: -1, Code: "CorruptBody"}
	// faultLost passes the request on, drops the server's answer and
	// answers 500 InternalError: the request was applied, the client
	// cannot know it.
	faultLost = &faultResponse{Status: -2, Code: "InternalError"}
)

type proxy struct {
	URL string

	mu       sync.Mutex
	seen     []request
	attempts map[string]int // by op+part
	fault    fault
	onOp     func(op, part string) // called before the request is forwarded
}

// newProxy starts a proxy in front of srv. For an HTTPS srv the proxy
// speaks HTTPS too, with its own certificate, whose PEM file it returns in
// caFile.
func newProxy(t *testing.T, srv testenv.S3, f fault) (p *proxy, caFile string) {
	t.Helper()
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p = &proxy{attempts: map[string]int{}, fault: f}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // the request is signed for the proxy's host
		},
		ErrorLog: log.New(io.Discard, "", 0), // cancelled requests are expected
	}
	if srv.CAFile != "" {
		pem, err := os.ReadFile(srv.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("no certificate in %s", srv.CAFile)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		rp.Transport = tr
	}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, part := operation(r)
		p.mu.Lock()
		p.attempts[op+part]++
		n := p.attempts[op+part]
		var fr *faultResponse
		if p.fault != nil {
			fr = p.fault(op, part, n)
		}
		onOp := p.onOp
		p.mu.Unlock()
		if onOp != nil {
			onOp(op, part)
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		switch {
		case fr == faultCorrupt:
			r.Body = &corrupter{r: r.Body}
			rp.ServeHTTP(rec, r)
		case fr == faultLost:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			w.Header().Set("Content-Type", "application/xml")
			rec.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>`+
				`<Message>answer lost by the test proxy</Message></Error>`)
		case fr != nil:
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			rec.WriteHeader(fr.Status)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+fr.Code+
				`</Code><Message>injected by the test proxy</Message></Error>`)
		default:
			rp.ServeHTTP(rec, r)
		}
		p.mu.Lock()
		p.seen = append(p.seen, request{Op: op, Part: part, Header: r.Header.Clone(), Status: rec.status})
		p.mu.Unlock()
	}))
	if srv.CAFile == "" {
		hs.Start()
	} else {
		hs.StartTLS()
		caFile = filepath.Join(t.TempDir(), "proxy.pem")
		cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
		if err := os.WriteFile(caFile, cert, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(hs.Close)
	p.URL = hs.URL
	return p, caFile
}

// requests returns the requests seen for op.
func (p *proxy) requests(op string) []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []request
	for _, r := range p.seen {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

func operation(r *http.Request) (op, part string) {
	q := r.URL.Query()
	_, uploads := q["uploads"]
	_, uploadID := q["uploadId"]
	switch {
	case r.Method == http.MethodPut && uploadID:
		return "UploadPart", q.Get("partNumber")
	case r.Method == http.MethodPost && uploads:
		return "CreateMultipartUpload", ""
	case r.Method == http.MethodPost && uploadID:
		return "CompleteMultipartUpload", ""
	case r.Method == http.MethodDelete && uploadID:
		return "AbortMultipartUpload", ""
	case r.Method == http.MethodPut:
		return "PutObject", ""
	}
	return r.Method, ""
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// corrupter flips one bit of the 1000th byte of the data it reads (the
// framing of an aws-chunked body is the first few bytes; the checksum
// trailer is at the end).
type corrupter struct {
	r   io.ReadCloser
	off int
}

func (c *corrupter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if i := 1000 - c.off; i >= 0 && i < n {
		p[i] ^= 1
	}
	c.off += n
	return n, err
}

func (c *corrupter) Close() error { return c.r.Close() }

// faultSetup is a bucket, a client that talks to it through p, a direct
// client, and a sink with 5 MiB parts through the proxy.
type faultSetup struct {
	direct *s3.Client
	bucket string
	p      *proxy
	b      *sink.Bucket
}

func setupFault(t *testing.T, useTLS bool, f fault, opts Options) faultSetup {
	t.Helper()
	srv := testenv.RequireS3(t)
	if useTLS {
		srv = testenv.RequireS3TLS(t)
	}
	direct := newClient(t, srv, "")
	bucket := newBucket(t, direct)
	p, caFile := newProxy(t, srv, f)
	opts.Bucket = bucket
	if opts.PartSize == 0 {
		opts.PartSize = MinPartSize
	}
	viaProxy := srv
	viaProxy.Endpoint, viaProxy.CAFile = p.URL, caFile
	return faultSetup{direct: direct, bucket: bucket, p: p, b: sink.New(newSink(t, newClient(t, viaProxy, ""), opts))}
}

// overHTTPAndHTTPS runs test once through a plain HTTP proxy in front of
// versitygw's HTTP port and once through an HTTPS proxy in front of its
// HTTPS port (where the SDK sends aws-chunked bodies with trailing
// checksums instead of signed payloads).
func overHTTPAndHTTPS(t *testing.T, test func(t *testing.T, useTLS bool)) {
	t.Run("HTTP", func(t *testing.T) { test(t, false) })
	t.Run("HTTPS", func(t *testing.T) { test(t, true) })
}

// requireNoUpload fails t if any multipart upload is left in the bucket.
func (f faultSetup) requireNoUpload(t *testing.T) {
	t.Helper()
	if ids := listUploads(t, f.direct, f.bucket); len(ids) != 0 {
		t.Fatalf("multipart uploads left in the bucket: %q", ids)
	}
}

func (f faultSetup) put(ctx context.Context, key string, data []byte) error {
	_, err := f.b.PutBytes(ctx, key, data, sink.PutOptions{ContentType: "application/octet-stream"})
	return err
}

// TestFailedPartAbortsUpload: the 2nd part keeps failing (every retry):
// Put fails, the older object is intact, the multipart upload is aborted.
func TestFailedPartAbortsUpload(t *testing.T) { overHTTPAndHTTPS(t, testFailedPartAbortsUpload) }

func testFailedPartAbortsUpload(t *testing.T, useTLS bool) {
	for _, fr := range []*faultResponse{
		{http.StatusServiceUnavailable, "SlowDown"},
		{http.StatusInternalServerError, "InternalError"},
		faultCorrupt, // the server's checksum check refuses it (BadDigest)
	} {
		t.Run(fr.Code, func(t *testing.T) {
			f := setupFault(t, useTLS, func(op, part string, _ int) *faultResponse {
				if op == "UploadPart" && part == "2" {
					return fr
				}
				return nil
			}, Options{})
			drivertest.MustPut(t, f.b, "k", []byte("older"))
			err := f.put(context.Background(), "k", drivertest.Bytes(3*MinPartSize+1, 1))
			if err == nil {
				t.Fatal("Put succeeded, want an error")
			}
			t.Logf("Put error: %v", err)
			drivertest.RequireContent(t, f.b, "k", []byte("older"))
			f.requireNoUpload(t)
			if n := len(f.p.requests("UploadPart")); n < 2 {
				t.Fatalf("proxy saw %d UploadPart requests, want the failing part and its retries", n)
			}
			if len(f.p.requests("AbortMultipartUpload")) == 0 {
				t.Fatal("no AbortMultipartUpload was sent")
			}
			if len(f.p.requests("CompleteMultipartUpload")) != 0 {
				t.Fatal("CompleteMultipartUpload was sent after a failed part")
			}
		})
	}
}

// TestPartRetried: a part that fails once is retried and the object is whole.
func TestPartRetried(t *testing.T) {
	f := setupFault(t, false, func(op, part string, attempt int) *faultResponse {
		if op == "UploadPart" && part == "2" && attempt == 1 {
			return &faultResponse{http.StatusInternalServerError, "InternalError"}
		}
		return nil
	}, Options{})
	data := drivertest.Bytes(2*MinPartSize+7, 3)
	if err := f.put(context.Background(), "k", data); err != nil {
		t.Fatal(err)
	}
	drivertest.RequireContent(t, f.b, "k", data)
	if n := len(f.p.requests("UploadPart")); n != 4 {
		t.Fatalf("proxy saw %d UploadPart requests, want 3 parts + 1 retry", n)
	}
}

// TestPutSlowDownRetried: a single PutObject answered 503 SlowDown is
// retried by the SDK and succeeds.
func TestPutSlowDownRetried(t *testing.T) { overHTTPAndHTTPS(t, testPutSlowDownRetried) }

func testPutSlowDownRetried(t *testing.T, useTLS bool) {
	f := setupFault(t, useTLS, func(op, _ string, attempt int) *faultResponse {
		if op == "PutObject" && attempt <= 2 {
			return &faultResponse{http.StatusServiceUnavailable, "SlowDown"}
		}
		return nil
	}, Options{})
	data := drivertest.Bytes(100_000, 4)
	if err := f.put(context.Background(), "k", data); err != nil {
		t.Fatalf("Put: %v", err)
	}
	puts := f.p.requests("PutObject")
	if len(puts) != 3 || puts[0].Status != 503 || puts[1].Status != 503 || puts[2].Status != 200 {
		t.Fatalf("PutObject statuses: %+v, want 503, 503, 200", puts)
	}
	drivertest.RequireContent(t, f.b, "k", data)
}

// TestPutCorruptedRefused: a PutObject body changed in flight fails the
// server's checksum check; nothing is stored.
func TestPutCorruptedRefused(t *testing.T) { overHTTPAndHTTPS(t, testPutCorruptedRefused) }

func testPutCorruptedRefused(t *testing.T, useTLS bool) {
	f := setupFault(t, useTLS, func(op, _ string, _ int) *faultResponse {
		if op == "PutObject" {
			return faultCorrupt
		}
		return nil
	}, Options{})
	err := f.put(context.Background(), "k", drivertest.Bytes(100_000, 5))
	if err == nil {
		t.Fatal("Put of a corrupted body succeeded, want an error")
	}
	// The server refuses it: over HTTP the signed payload hash does not
	// match; over HTTPS (unsigned aws-chunked payload) the SHA-256 trailer.
	want := "XAmzContentSHA256Mismatch"
	if useTLS {
		want = "BadDigest"
	}
	if code := errorCode(err); code != want {
		t.Errorf("Put error code %q, want %q: %v", code, want, err)
	}
	drivertest.RequireMissing(t, f.b, "k")
}

// TestCancelMidMultipart: cancelling the context while parts are in
// flight fails Put and leaves no multipart upload, although the manager's
// own abort runs with the cancelled context.
func TestCancelMidMultipart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := setupFault(t, false, nil, Options{Concurrency: 1})
	f.p.onOp = func(op, part string) {
		if op == "UploadPart" && part == "2" {
			cancel()
		}
	}
	err := f.put(ctx, "k", drivertest.Bytes(4*MinPartSize, 6))
	if err == nil {
		t.Fatal("Put after cancel = nil, want an error")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put error %v does not wrap context.Canceled", err)
	}
	if len(f.p.requests("CreateMultipartUpload")) != 1 {
		t.Fatal("no multipart upload was started")
	}
	drivertest.RequireMissing(t, f.b, "k")
	f.requireNoUpload(t)
}

// TestRequestHeaders: SSE goes on every PutObject (conditional ones too)
// and CreateMultipartUpload, with the content type and a SHA-256 checksum
// (versitygw does not echo SSE back, so the proxy looks).
func TestRequestHeaders(t *testing.T) { overHTTPAndHTTPS(t, testRequestHeaders) }

func testRequestHeaders(t *testing.T, useTLS bool) {
	f := setupFault(t, useTLS, nil, Options{SSE: SSEAES256})
	ctx := context.Background()
	drivertest.MustPut(t, f.b, "small", []byte("x"))
	m, err := f.b.PutBytes(ctx, "manifest.json", []byte("{}"), sink.PutOptions{IfNoneMatch: true, ContentType: "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.PutBytes(ctx, "manifest.json", []byte("{ }"), sink.PutOptions{IfMatch: m.ETag, ContentType: "application/json"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.PutBytes(ctx, "large", drivertest.Bytes(MinPartSize+1, 8), sink.PutOptions{ContentType: "application/vnd.apache.parquet"}); err != nil {
		t.Fatal(err)
	}
	put := f.p.requests("PutObject")
	create := f.p.requests("CreateMultipartUpload")
	parts := f.p.requests("UploadPart")
	if len(put) != 3 || len(create) != 1 || len(parts) != 2 {
		t.Fatalf("saw %d PutObject, %d CreateMultipartUpload, %d UploadPart; want 3, 1, 2", len(put), len(create), len(parts))
	}
	for _, r := range append(put, create...) {
		if got := r.Header.Get("X-Amz-Server-Side-Encryption"); got != "AES256" {
			t.Errorf("%s x-amz-server-side-encryption = %q, want AES256", r.Op, got)
		}
	}
	for i, want := range [][2]string{{"", ""}, {"*", ""}, {"", m.ETag}} {
		if got := [2]string{put[i].Header.Get("If-None-Match"), put[i].Header.Get("If-Match")}; got != want {
			t.Errorf("PutObject %d If-None-Match, If-Match = %q, want %q", i, got, want)
		}
	}
	for i, want := range []string{"application/octet-stream", "application/json", "application/json"} {
		if got := put[i].Header.Get("Content-Type"); got != want {
			t.Errorf("PutObject %d Content-Type = %q, want %q", i, got, want)
		}
	}
	if got := create[0].Header.Get("Content-Type"); got != "application/vnd.apache.parquet" {
		t.Errorf("CreateMultipartUpload Content-Type = %q", got)
	}
	if got := create[0].Header.Get("X-Amz-Checksum-Algorithm"); got != "SHA256" {
		t.Errorf("CreateMultipartUpload x-amz-checksum-algorithm = %q, want SHA256", got)
	}
	for _, r := range append(put, parts...) {
		// Over HTTP the checksum is a header; over HTTPS a trailer of an
		// aws-chunked body, announced by x-amz-trailer.
		if useTLS {
			if got := r.Header.Get("X-Amz-Trailer"); got != "x-amz-checksum-sha256" {
				t.Errorf("%s %s x-amz-trailer = %q, want x-amz-checksum-sha256", r.Op, r.Part, got)
			}
		} else if r.Header.Get("X-Amz-Checksum-Sha256") == "" {
			t.Errorf("%s %s has no x-amz-checksum-sha256 header: %v", r.Op, r.Part, r.Header)
		}
	}
	out, err := f.direct.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(f.bucket), Key: aws.String("large")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.ContentType) != "application/vnd.apache.parquet" {
		t.Errorf("stored Content-Type = %q", aws.ToString(out.ContentType))
	}
}

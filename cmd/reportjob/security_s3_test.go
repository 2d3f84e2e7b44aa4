package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/s3sink"
	"github.com/reportjob/reportjob/internal/testenv"
)

// s3Request is what the recording proxy saw of one S3 request.
type s3Request struct {
	Op, Path, Prefix string
	Header           http.Header
}

// s3Recorder is a reverse proxy on loopback in front of versitygw that
// records every request: how the SDK really calls S3, headers included.
type s3Recorder struct {
	URL  string
	mu   sync.Mutex
	seen []s3Request
}

func newS3Recorder(t *testing.T, target string) *s3Recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &s3Recorder{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // signed for the proxy's host
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, s3Request{Op: s3Op(r), Path: r.URL.Path, Prefix: r.URL.Query().Get("prefix"), Header: r.Header.Clone()})
		rec.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// s3Op names the S3 operation of a path-style request.
func s3Op(r *http.Request) string {
	q := r.URL.Query()
	_, uploads := q["uploads"]
	_, uploadID := q["uploadId"]
	_, del := q["delete"]
	object := strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0
	switch {
	case r.Method == http.MethodPut && uploadID:
		return "UploadPart"
	case r.Method == http.MethodPost && uploads:
		return "CreateMultipartUpload"
	case r.Method == http.MethodPost && uploadID:
		return "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && uploadID:
		return "AbortMultipartUpload"
	case r.Method == http.MethodPost && del:
		return "DeleteObjects"
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		return "CopyObject"
	case r.Method == http.MethodPut && object:
		return "PutObject"
	case r.Method == http.MethodPut:
		return "CreateBucket"
	case object:
		return r.Method + "Object"
	}
	return r.Method + "Bucket"
}

func (rec *s3Recorder) requests() []s3Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]s3Request(nil), rec.seen...)
}

// pushgatewayStub records the Authorization header of each push.
func pushgatewayStub(t *testing.T) (string, func() []string) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auth...)
	}
}

// bigAgencyTx are n purchases of agency "big" with 250-character ids,
// customers and products: its transactions CSV is ~870 bytes a row.
func bigAgencyTx(start time.Time, n int) []item.Transaction {
	usd := money.Currency{Code: "USD", Digits: 2}
	pad := func(prefix string, i int) string {
		s := fmt.Sprintf("%s-%05d-", prefix, i)
		return s + strings.Repeat("x", 250-len(s))
	}
	out := make([]item.Transaction, n)
	for i := range out {
		at := start.Add(time.Duration(i) * 250 * time.Millisecond)
		id := pad("big", i)
		pk, sk := keys.ForTransaction(id, at, 1)
		out[i] = item.Transaction{PK: pk, SK: sk, ID: id, AgencyID: "big", CustomerID: pad("cust", i), ProductID: pad("prod", i),
			Kind: item.Purchase, Currency: usd, Amount: 1999, RecordedAt: at.Truncate(time.Millisecond)}
	}
	return out
}

// TestSecurityS3 runs the CLI (embedded store, S3 sink through a recording
// proxy in front of versitygw, metrics to a Pushgateway with user:password
// in its URL, debug logs) through deliveries, a restatement, a multipart
// upload and failing runs, and checks:
//   - SSE (AES256) on every PutObject (plain, If-None-Match and If-Match
//     manifests) and every CreateMultipartUpload;
//   - every object request and listing stays under the sink's prefix, and
//     the hostile agency ids get escaped folders under it;
//   - the S3 secret key (the real one and a wrong one) and the
//     Pushgateway password appear in no output of any run, succeeding or
//     failing, nor in any object.
func TestSecurityS3(t *testing.T) {
	srv := testenv.RequireS3(t)
	rec := newS3Recorder(t, srv.Endpoint)
	pgwURL, pushes := pushgatewayStub(t)
	const pgwPassword = "pgw-Pa55-w0rd-SECRET"
	const wrongSecret = "wrong-SECRET-key-0123456789"
	pgw := strings.Replace(pgwURL, "http://", "http://pgwuser:"+pgwPassword+"@", 1)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	bucket := fmt.Sprintf("rj-sec-%d", time.Now().UnixNano()%1_000_000_000)

	h := newHarness(t, harnessOptions{})
	base := []string{
		"REPORTJOB_SINK_URL=s3://" + bucket + "/billing/reports",
		"REPORTJOB_SINK_S3_ENDPOINT=" + rec.URL,
		"REPORTJOB_SINK_S3_PATH_STYLE=true",
		"REPORTJOB_SINK_S3_SSE=AES256",
		"REPORTJOB_METRICS_PUSHGATEWAY_URL=" + pgw,
		"REPORTJOB_LOG_LEVEL=debug",
		"RJTEST_S3_PART_SIZE=5242880", // multipart above 5 MiB
	}
	var transcript strings.Builder
	run := func(env []string, want int, args ...string) string {
		t.Helper()
		h.env = append(append([]string(nil), base...), env...)
		out, errs, code := h.run(args...)
		fmt.Fprintf(&transcript, "$ reportjob %s\n%s%s", strings.Join(args, " "), out, errs)
		if code != want {
			t.Fatalf("reportjob %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out + errs
	}

	run(nil, exitOK, "init")
	h.putTx(append(hostileAgencyTx(bdPeriod.Start), bigAgencyTx(bdPeriod.Start.Add(10*time.Minute), 6500)...)...)
	run(nil, exitOK, "run", "--now", bdNow)
	// A late item: the recheck at 02:00 restates the period (If-Match).
	late := bigAgencyTx(bdPeriod.Start.Add(59*time.Minute), 1)[0]
	late.ID, late.AgencyID = "late-1", "acme"
	late.PK, late.SK = keys.ForTransaction(late.ID, late.RecordedAt, 1)
	h.putTx(late, bTx("next-1", "2024-03-01T01:30:00Z", "1.00"))
	if out := run(nil, exitOK, "run", "--now", "2024-03-01T02:00:00Z"); !strings.Contains(out, `"restated":1`) {
		t.Fatalf("no restatement:\n%s", out)
	}
	// Failing runs: a wrong secret key, an unreachable Pushgateway, a bad
	// Pushgateway URL, a misspelt variable holding a URL with a password.
	t.Setenv("AWS_SECRET_ACCESS_KEY", wrongSecret)
	run(nil, exitFailed, "run", "--now", "2024-03-01T02:02:00Z")
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	down := strings.Replace(closed.URL, "http://", "http://pgwuser:"+pgwPassword+"@", 1)
	if out := run([]string{"REPORTJOB_METRICS_PUSHGATEWAY_URL=" + down}, exitOK, "run", "--now", "2024-03-01T02:02:00Z"); !strings.Contains(out, "push metrics") {
		t.Errorf("the unreachable Pushgateway was not reported:\n%s", out)
	}
	run([]string{"REPORTJOB_METRICS_PUSHGATEWAY_URL=ftp://pgwuser:" + pgwPassword + "@gw:9091"}, exitUsage, "run", "--now", "2024-03-01T02:02:00Z")
	run([]string{"REPORTJOB_METRICS_PUSHGATEWAY_UR=" + pgw}, exitUsage, "status")
	run(nil, exitOK, "verify", "--from", "2024-03-01", "--to", "2024-03-01T02:00:00Z", "--now", "2024-03-01T02:02:00Z")
	run(nil, exitOK, "status", "--now", "2024-03-01T02:02:00Z")
	run(nil, exitOK, "run", "--dry-run", "--now", "2024-03-01T03:02:00Z")

	// Secrets: in no output, and in no object.
	objs := h.objects()
	var keyList []string
	for k := range objs {
		keyList = append(keyList, k)
		if body := string(h.read(h.sink(), k)); strings.Contains(body, srv.SecretKey) || strings.Contains(body, pgwPassword) {
			t.Errorf("object %s holds a secret", k)
		}
	}
	for _, secret := range []string{srv.SecretKey, wrongSecret, pgwPassword} {
		if i := strings.Index(transcript.String(), secret); i >= 0 {
			t.Errorf("secret %q in the output: ...%s...", secret, transcript.String()[max(0, i-300):i+len(secret)])
		}
	}
	var authed int
	for _, a := range pushes() {
		if strings.HasPrefix(a, "Basic ") {
			authed++
		}
	}
	if authed == 0 {
		t.Errorf("no push carried the Pushgateway credentials (%d pushes)", len(pushes()))
	}

	// Keys: every object under the prefix, agencies escaped.
	checkAgencyKeys(t, keyList, "big")
	direct, err := s3sink.NewClient(context.Background(), s3sink.ClientConfig{Region: "us-east-1", Endpoint: srv.Endpoint, PathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	list, err := direct.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		if !strings.HasPrefix(aws.ToString(o.Key), "billing/reports/") {
			t.Errorf("object %s outside the prefix", aws.ToString(o.Key))
		}
	}

	// SSE on every upload; every object request under the prefix.
	counts := map[string]int{}
	var ifNoneMatch, ifMatch int
	for _, r := range rec.requests() {
		counts[r.Op]++
		switch r.Op {
		case "PutObject", "CreateMultipartUpload", "CopyObject":
			if got := r.Header.Get("X-Amz-Server-Side-Encryption"); got != "AES256" {
				t.Errorf("%s %s: x-amz-server-side-encryption %q, want AES256", r.Op, r.Path, got)
			}
			if r.Header.Get("If-None-Match") == "*" {
				ifNoneMatch++
			}
			if r.Header.Get("If-Match") != "" {
				ifMatch++
			}
		}
		if strings.HasSuffix(r.Op, "Object") || strings.Contains(r.Op, "Multipart") || r.Op == "UploadPart" {
			if !strings.HasPrefix(r.Path, "/"+bucket+"/billing/reports/") {
				t.Errorf("%s %s: outside the prefix", r.Op, r.Path)
			}
		}
		if r.Op == "GETBucket" && r.Prefix != "" && !strings.HasPrefix(r.Prefix, "billing/reports/") {
			t.Errorf("listing of prefix %q, outside the sink's", r.Prefix)
		}
	}
	if counts["PutObject"] < 10 || counts["CreateMultipartUpload"] < 1 || counts["UploadPart"] < 2 || ifNoneMatch < 2 || ifMatch < 1 {
		t.Errorf("requests %v (%d If-None-Match, %d If-Match): want plain, conditional and multipart uploads", counts, ifNoneMatch, ifMatch)
	}
	t.Logf("S3 requests %v; %d If-None-Match and %d If-Match puts; %d objects; %d pushes; transcript %d bytes",
		counts, ifNoneMatch, ifMatch, len(objs), len(pushes()), transcript.Len())
}

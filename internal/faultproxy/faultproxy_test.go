package faultproxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestS3Operation(t *testing.T) {
	for _, tt := range []struct{ method, url, op, key string }{
		{"PUT", "/b/a/b%3Dc.csv", "PutObject", "a/b=c.csv"},
		{"PUT", "/b/k?partNumber=2&uploadId=u", "UploadPart", "k"},
		{"PUT", "/b", "CreateBucket", ""},
		{"POST", "/b/k?uploads", "CreateMultipartUpload", "k"},
		{"POST", "/b/k?uploadId=u", "CompleteMultipartUpload", "k"},
		{"DELETE", "/b/k?uploadId=u", "AbortMultipartUpload", "k"},
		{"DELETE", "/b/k", "DeleteObject", "k"},
		{"GET", "/b/k", "GetObject", "k"},
		{"GET", "/b?list-type=2&prefix=x", "ListObjects", ""},
		{"HEAD", "/b/k", "HeadObject", "k"},
		{"HEAD", "/b", "HeadBucket", ""},
	} {
		r := httptest.NewRequest(tt.method, tt.url, nil)
		if op, key := s3Operation(r); op != tt.op || key != tt.key {
			t.Errorf("%s %s = %s %q, want %s %q", tt.method, tt.url, op, key, tt.op, tt.key)
		}
	}
}

func TestAddLimit(t *testing.T) {
	if got := string(addLimit([]byte(`{"TableName":"t"}`), 7)); got != `{"Limit":7,"TableName":"t"}` {
		t.Errorf("addLimit = %s", got)
	}
	if got := string(addLimit([]byte(`{"Limit":2}`), 7)); got != `{"Limit":2}` {
		t.Errorf("addLimit kept no existing limit: %s", got)
	}
}

// TestFaults drives each kind of fault through an HTTPS proxy in front of
// a counting backend.
func TestFaults(t *testing.T) {
	var applied atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		applied.Add(1)
		w.Write([]byte("ok"))
	}))
	defer backend.Close()
	p, err := Start(Options{Service: S3, Target: backend.URL, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CertPEM)
	client := &http.Client{Timeout: 300 * time.Millisecond,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, tt := range []struct {
		f       Fault
		status  int // 0: the request fails
		applied int32
	}{
		{Fault{}, 200, 1},
		{SlowDown, 503, 0},
		{ConnReset, 0, 0},
		{LostAnswer, 0, 1},
		{Fault{Kind: LostFail, Status: 500, Code: "InternalError"}, 500, 1},
		{Fault{Kind: Slow, Delay: time.Second}, 0, 0}, // the client gives up first
	} {
		applied.Store(0)
		p.SetRule(Always(tt.f, Ops("PutObject")))
		req, _ := http.NewRequest(http.MethodPut, p.URL+"/b/k", strings.NewReader("body"))
		resp, err := client.Do(req)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		if tt.f.Kind == Slow {
			time.Sleep(1200 * time.Millisecond) // a stalled request would be forwarded by now
		}
		if status != tt.status || applied.Load() != tt.applied {
			t.Errorf("%v: status %d (%v), applied %d; want %d, %d", tt.f.Kind, status, err, applied.Load(), tt.status, tt.applied)
		}
		if ev := p.Events(); len(ev) != 1 || ev[0].Fault != tt.f.Kind || ev[0].Op != "PutObject" || ev[0].Key != "k" {
			t.Errorf("%v: events %+v", tt.f.Kind, ev)
		}
	}
}

// TestUnprocessed: a BatchWriteItem keeps its first Keep requests and
// hands the others back; a BatchGetItem the same with keys.
func TestUnprocessed(t *testing.T) {
	var got []map[string]any
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		got = append(got, m)
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), "BatchGetItem") {
			w.Write([]byte(`{"Responses":{"t":[{"k":{"S":"a"}}]}}`))
			return
		}
		w.Write([]byte(`{"UnprocessedItems":{}}`))
	}))
	defer backend.Close()
	p, err := Start(Options{Service: DynamoDB, Target: backend.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetRule(func(*Request) Fault { return Fault{Kind: Unprocessed, Keep: 1} })
	call := func(op, body string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, p.URL, strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	out := call("BatchWriteItem", `{"RequestItems":{"t":[{"PutRequest":{"Item":{"k":{"S":"a"}}}},{"PutRequest":{"Item":{"k":{"S":"b"}}}}]}}`)
	if b, _ := json.Marshal(out); string(b) != `{"UnprocessedItems":{"t":[{"PutRequest":{"Item":{"k":{"S":"b"}}}}]}}` {
		t.Errorf("BatchWriteItem answer %s", b)
	}
	out = call("BatchGetItem", `{"RequestItems":{"t":{"ConsistentRead":true,"Keys":[{"k":{"S":"a"}},{"k":{"S":"b"}}]}}}`)
	if b, _ := json.Marshal(out); string(b) != `{"Responses":{"t":[{"k":{"S":"a"}}]},"UnprocessedKeys":{"t":{"ConsistentRead":true,"Keys":[{"k":{"S":"b"}}]}}}` {
		t.Errorf("BatchGetItem answer %s", b)
	}
	if b, _ := json.Marshal(got); string(b) != `[{"RequestItems":{"t":[{"PutRequest":{"Item":{"k":{"S":"a"}}}}]}},{"RequestItems":{"t":{"ConsistentRead":true,"Keys":[{"k":{"S":"a"}}]}}}]` {
		t.Errorf("the server got %s", b)
	}
}

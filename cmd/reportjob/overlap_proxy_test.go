//go:build linux

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/testenv"
)

// recProxy is a plain-HTTP reverse proxy on loopback in front of one real
// server (versitygw over HTTPS, or DynamoDB Local) that records every
// request of the one process pointed at it, and can run a hook when a
// response comes back, before the process gets it: the overlap test stops
// (SIGSTOP) a lease holder there, so that it is stopped at an exact step,
// with its write applied and the answer not yet read. It forwards the
// Host header as the client signed it (SigV4).
type recProxy struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []recReq
	// hook, when set, sees each response before the client does.
	hook func(r recReq)
}

// recReq is one request the proxy forwarded.
type recReq struct {
	At     time.Time // when it arrived at the proxy
	Method string
	Path   string
	Op     string // DynamoDB: the X-Amz-Target operation ("PutItem")
	// Conditional: an S3 PUT with If-Match or If-None-Match, or a DynamoDB
	// write with a ConditionExpression: the server refuses it when its
	// condition no longer holds.
	Conditional bool
	// Index: a DynamoDB request about the dedupe index (claims, period
	// lists), not the job's state.
	Index bool
	// Dropped: a DynamoDB request whose body did not arrive whole (the
	// client gave up): the proxy did not forward it.
	Dropped bool
	Status  int // 0 when no answer came back (the client gave up)
}

// write reports whether the request changes something: an S3 PUT, POST or
// DELETE, or a DynamoDB write operation.
func (r recReq) write() bool {
	if r.Dropped {
		return false
	}
	if r.Op != "" {
		switch r.Op {
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
			return true
		}
		return false
	}
	return r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
}

// succeeded reports whether the server applied it (a 2xx answer; a failed
// condition is a 400 or 412).
func (r recReq) succeeded() bool { return r.Status >= 200 && r.Status < 300 }

func newRecProxy(t *testing.T, upstream string) *recProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		pem, err := os.ReadFile(os.Getenv(testenv.EnvS3CA))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	p := &recProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // as signed
		},
		Transport: tr,
		ModifyResponse: func(resp *http.Response) error {
			req := resp.Request
			p.mu.Lock()
			hook := p.hook
			p.mu.Unlock()
			if hook != nil {
				hook(recReq{At: time.Now(), Method: req.Method, Path: req.URL.Path, Op: op(req), Status: resp.StatusCode})
			}
			return nil
		},
		ErrorLog: log.New(io.Discard, "", 0), // a client that gave up is expected
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := recReq{At: time.Now(), Method: req.Method, Path: req.URL.Path, Op: op(req)}
		sw := &statusWriter{ResponseWriter: w}
		if r.Op == "" {
			r.Conditional = req.Header.Get("If-Match") != "" || req.Header.Get("If-None-Match") != ""
			rp.ServeHTTP(sw, req)
		} else if body, err := io.ReadAll(req.Body); err != nil {
			// The client gave up before its request was whole: it is not
			// forwarded, so it cannot have been applied.
			r.Dropped = true
			sw.WriteHeader(http.StatusBadGateway)
		} else {
			r.Conditional = bytes.Contains(body, []byte(`"ConditionExpression"`))
			r.Index = bytes.Contains(body, []byte("#claim#")) || bytes.Contains(body, []byte("#period#"))
			req.Body = io.NopCloser(bytes.NewReader(body))
			rp.ServeHTTP(sw, req)
		}
		r.Status = sw.status
		p.mu.Lock()
		p.reqs = append(p.reqs, r)
		p.mu.Unlock()
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// op is a DynamoDB request's operation ("" for S3).
func op(req *http.Request) string {
	o := req.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(o, '.'); i >= 0 {
		o = o[i+1:]
	}
	return o
}

// statusWriter keeps the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// URL is the proxy's endpoint.
func (p *recProxy) URL() string { return p.srv.URL }

func (p *recProxy) setHook(h func(recReq)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

// since returns the requests that arrived after t.
func (p *recProxy) since(t time.Time) []recReq {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []recReq
	for _, r := range p.reqs {
		if r.At.After(t) {
			out = append(out, r)
		}
	}
	return out
}

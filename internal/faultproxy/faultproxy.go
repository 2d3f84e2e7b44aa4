// Package faultproxy is a test helper: a reverse proxy on 127.0.0.1 in
// front of a real S3 server (versitygw) or DynamoDB server (DynamoDB
// Local) that injects the faults those servers never produce: error
// answers (503 SlowDown, 500, 400 ThrottlingException), connection resets,
// answers lost after the server applied the request, slow answers past the
// client's request deadline, and DynamoDB batch calls that leave items or
// keys unprocessed.
//
// A Rule decides the fate of each request from its operation name
// ("PutObject", "UploadPart", "Query", "UpdateItem", ...), its S3 object
// key, its headers and, for DynamoDB, its JSON body. Every request is
// recorded as an Event. The proxy speaks HTTPS when asked, with a
// self-signed certificate for 127.0.0.1 of its own (CertPEM), so that a
// client trusts it by adding that PEM to its CA bundle.
//
// The proxy does not re-sign requests: it relies on the servers it fronts
// not checking signatures against a rewritten body (DynamoDB Local does
// not; the S3 proxy never rewrites a body).
package faultproxy

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Service is the protocol of the server behind the proxy.
type Service int

// The services a proxy can front.
const (
	S3 Service = iota + 1
	DynamoDB
)

// Options configure a proxy.
type Options struct {
	Service Service
	// Target is the real server, e.g. "https://127.0.0.1:9000".
	Target string
	// TargetCA is a PEM file of the CA to trust for an https Target.
	TargetCA string
	// TLS makes the proxy serve HTTPS (with its own certificate, CertPEM).
	TLS bool
	// QueryLimit, for DynamoDB, adds "Limit": QueryLimit to every Query
	// that has none, so that small tables are read in many pages.
	QueryLimit int
}

// Request is what a Rule sees of a request.
type Request struct {
	Op string
	// Key is the S3 object key (after the bucket, path-style), "" for
	// bucket operations and DynamoDB.
	Key    string
	Header http.Header
	// Body is the JSON request of a DynamoDB call (nil for S3).
	Body []byte
	// N counts the requests of Op so far, this one included (from 1).
	N int
	// ID is the same for a request and the SDK's retries of it: the
	// method, path and query of an S3 request; the operation and a hash
	// of the body of a DynamoDB call.
	ID string
}

// Has reports whether the DynamoDB request body contains s.
func (r *Request) Has(s string) bool { return bytes.Contains(r.Body, []byte(s)) }

// Kind is what the proxy does with a request.
type Kind int

// The kinds of fault.
const (
	Pass Kind = iota
	// Fail answers Status and Code without forwarding.
	Fail
	// Reset closes the connection (TCP RST) without forwarding.
	Reset
	// Lost forwards the request, drops the server's answer and resets the
	// connection: the request was applied, the client cannot know it.
	Lost
	// LostFail forwards the request, drops the server's answer and
	// answers Status and Code instead.
	LostFail
	// Slow waits Delay, then forwards the request if the client still
	// waits (a client that gave up never reaches the server).
	Slow
	// Unprocessed forwards only the first Keep requests of a DynamoDB
	// BatchWriteItem or BatchGetItem and hands the others back as
	// UnprocessedItems or UnprocessedKeys (other operations pass).
	Unprocessed
)

var kindNames = [...]string{"pass", "fail", "reset", "lost", "lost-fail", "slow", "unprocessed"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is a Rule's decision. The zero Fault passes the request on.
type Fault struct {
	Kind   Kind
	Status int    // Fail, LostFail
	Code   string // Fail, LostFail: the error code written in the body
	Delay  time.Duration
	Keep   int // Unprocessed
}

// Faults as the services send them.
var (
	SlowDown         = Fault{Kind: Fail, Status: http.StatusServiceUnavailable, Code: "SlowDown"}
	S3InternalError  = Fault{Kind: Fail, Status: http.StatusInternalServerError, Code: "InternalError"}
	Throttling       = Fault{Kind: Fail, Status: http.StatusBadRequest, Code: "ThrottlingException"}
	ThroughputExceed = Fault{Kind: Fail, Status: http.StatusBadRequest, Code: "ProvisionedThroughputExceededException"}
	DDBInternalError = Fault{Kind: Fail, Status: http.StatusInternalServerError, Code: "InternalServerError"}
	Precondition     = Fault{Kind: Fail, Status: http.StatusPreconditionFailed, Code: "PreconditionFailed"}
	ConnReset        = Fault{Kind: Reset}
	LostAnswer       = Fault{Kind: Lost}
)

// Rule decides the fate of a request. It is called with the proxy's lock
// held, one request at a time.
type Rule func(r *Request) Fault

// Event is one request as the proxy handled it.
type Event struct {
	Op, Key string
	N       int
	Fault   Kind
	Code    string // the Fault's Code
	// Status is what the client got: 0 for a reset or a client that gave
	// up.
	Status int
}

// Proxy is a running fault proxy.
type Proxy struct {
	// URL is the proxy's endpoint, e.g. "https://127.0.0.1:41234".
	URL string
	// CertPEM is the proxy's certificate when it serves HTTPS.
	CertPEM []byte

	opts   Options
	srv    *http.Server
	ln     net.Listener
	rp     *httputil.ReverseProxy
	target *url.URL

	mu     sync.Mutex
	rule   Rule
	counts map[string]int
	events []Event
}

// Start starts a proxy; Close stops it.
func Start(o Options) (*Proxy, error) {
	if o.Service != S3 && o.Service != DynamoDB {
		return nil, errors.New("faultproxy: unknown service")
	}
	u, err := url.Parse(o.Target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q: want a URL", o.Target)
	}
	p := &Proxy{opts: o, target: u, counts: map[string]int{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // the request is signed for the proxy's host
		},
		ErrorLog: log.New(io.Discard, "", 0), // requests the client gave up on are expected
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.TargetCA != "" {
		pemData, err := os.ReadFile(o.TargetCA)
		if err != nil {
			return nil, fmt.Errorf("faultproxy: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("faultproxy: no certificate in %s", o.TargetCA)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	p.rp.Transport = tr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p.ln = ln
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ErrorLog: log.New(io.Discard, "", 0)}
	scheme := "http"
	if o.TLS {
		cert, certPEM, err := selfSigned()
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("faultproxy: %w", err)
		}
		p.CertPEM = certPEM
		// HTTP/1.1 only, so that a connection can be hijacked and reset.
		p.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		p.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		ln = tls.NewListener(ln, p.srv.TLSConfig)
		scheme = "https"
	}
	p.URL = scheme + "://" + p.ln.Addr().String()
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error { return p.srv.Close() }

// SetRule replaces the rule (nil passes everything) and clears the counts
// and events.
func (p *Proxy) SetRule(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = r
	p.counts = map[string]int{}
	p.events = nil
}

// SetQueryLimit changes Options.QueryLimit (0: none).
func (p *Proxy) SetQueryLimit(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.QueryLimit = n
}

// Events returns the requests handled since the last SetRule.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Injected counts the events whose fault is not Pass.
func (p *Proxy) Injected() int {
	n := 0
	for _, e := range p.Events() {
		if e.Fault != Pass {
			n++
		}
	}
	return n
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	req := &Request{Header: r.Header.Clone()}
	if p.opts.Service == DynamoDB {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		req.Op = strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		p.mu.Lock()
		limit := p.opts.QueryLimit
		p.mu.Unlock()
		if req.Op == "Query" && limit > 0 {
			body = addLimit(body, limit)
		}
		req.Body = body
		setBody(r, body)
		sum := sha256.Sum256(body)
		req.ID = req.Op + " " + hex.EncodeToString(sum[:8])
	} else {
		req.Op, req.Key = s3Operation(r)
		req.ID = r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery
	}
	p.mu.Lock()
	p.counts[req.Op]++
	req.N = p.counts[req.Op]
	var f Fault
	if p.rule != nil {
		f = p.rule(req)
	}
	p.mu.Unlock()
	record := func(status int) {
		p.mu.Lock()
		p.events = append(p.events, Event{Op: req.Op, Key: req.Key, N: req.N, Fault: f.Kind, Code: f.Code, Status: status})
		p.mu.Unlock()
	}
	if status := p.apply(w, r, req, f, record); status >= 0 {
		record(status)
	}
}

// apply does f and returns the status the client got (0 for none), or -1
// when it has called record itself (before a reset, which the client
// sees at once).
func (p *Proxy) apply(w http.ResponseWriter, r *http.Request, req *Request, f Fault, record func(int)) int {
	switch f.Kind {
	case Fail:
		io.Copy(io.Discard, r.Body)
		return p.writeError(w, f)
	case Reset:
		record(0)
		reset(w)
		return -1
	case Lost:
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		record(0)
		reset(w)
		return -1
	case LostFail:
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		return p.writeError(w, f)
	case Slow:
		// Read the body first: only then does the server notice a client
		// that gives up (and cancel r's context), so that a request the
		// client abandoned never reaches the server.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return 0
		}
		setBody(r, body)
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return 0
		}
	case Unprocessed:
		if p.opts.Service == DynamoDB && (req.Op == "BatchWriteItem" || req.Op == "BatchGetItem") {
			return p.unprocessed(w, r, req, f.Keep)
		}
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	p.rp.ServeHTTP(rec, r)
	if r.Context().Err() != nil {
		return 0
	}
	return rec.status
}

// writeError answers f as the service would.
func (p *Proxy) writeError(w http.ResponseWriter, f Fault) int {
	const msg = "injected by the fault proxy"
	if p.opts.Service == DynamoDB {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(f.Status)
		b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + f.Code, "message": msg})
		w.Write(b)
		return f.Status
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(f.Status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+f.Code+`</Code><Message>`+msg+`</Message></Error>`)
	return f.Status
}

// reset closes the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faultproxy: connection cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	raw.Close()
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

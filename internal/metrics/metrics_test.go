package metrics

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// request is what the Pushgateway stand-in saw.
type request struct {
	method, path, contentType string
	user, pass                string
	families                  map[string]*dto.MetricFamily
}

// gateway is a Pushgateway stand-in on loopback. It records every request and
// keeps metric families per grouping key (the URL path) with the gateway's
// semantics: PUT replaces the group, POST replaces only the names it carries.
type gateway struct {
	t      *testing.T
	status int // response status; 0 means 200

	mu     sync.Mutex
	reqs   []request
	groups map[string]map[string]*dto.MetricFamily
}

func newGateway(t *testing.T) (*gateway, *httptest.Server) {
	t.Helper()
	g := &gateway{t: t, groups: map[string]map[string]*dto.MetricFamily{}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		g.t.Errorf("read body: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		g.t.Errorf("body is not the text exposition format: %v\n%s", err, body)
	}
	user, pass, _ := r.BasicAuth()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reqs = append(g.reqs, request{r.Method, r.URL.EscapedPath(), r.Header.Get("Content-Type"), user, pass, fams})
	if g.status != 0 {
		http.Error(w, "stand-in says no", g.status)
		return
	}
	grp := g.groups[r.URL.Path]
	if r.Method == http.MethodPut || grp == nil {
		grp = map[string]*dto.MetricFamily{}
	}
	maps.Copy(grp, fams)
	g.groups[r.URL.Path] = grp
	w.WriteHeader(http.StatusOK)
}

func (g *gateway) last() request {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.reqs) == 0 {
		g.t.Fatal("gateway got no request")
	}
	return g.reqs[len(g.reqs)-1]
}

func (g *gateway) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.reqs)
}

// gaugeValue returns the single gauge sample of name in fams.
func gaugeValue(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	mf, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s not pushed; got %v", name, slices.Sorted(maps.Keys(fams)))
	}
	if mf.GetType() != dto.MetricType_GAUGE {
		t.Errorf("%s: type %v, want GAUGE", name, mf.GetType())
	}
	if mf.GetHelp() == "" {
		t.Errorf("%s: no help string", name)
	}
	if n := len(mf.GetMetric()); n != 1 {
		t.Fatalf("%s: %d samples, want 1", name, n)
	}
	m := mf.GetMetric()[0]
	if len(m.GetLabel()) != 0 {
		t.Errorf("%s: labels %v, want none (job/instance belong to the grouping key)", name, m.GetLabel())
	}
	return m.GetGauge().GetValue()
}

var (
	t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(90*time.Second + 500*time.Millisecond)
)

func sampleRun(success bool) Run {
	return Run{
		Job: "billing-report", Instance: "pod-1",
		Start: t0, End: t1, Success: success,
		PeriodsProcessed: 3, PeriodsRemaining: 2,
		Transactions: 1234, Rejects: 5, Duplicates: 7,
		LagSeconds: 3720.5,
		Rechecks:   4, RechecksRemaining: 1, Restatements: 2, LateItems: 9,
		StatementsIssued: 2, MonthsClosed: 1, PriorPeriodAdjustments: 3, UnlistedAgencies: 4,
	}
}

func TestPushSuccess(t *testing.T) {
	g, srv := newGateway(t)
	if err := Push(context.Background(), srv.URL, sampleRun(true), srv.Client()); err != nil {
		t.Fatal(err)
	}
	req := g.last()
	if req.method != http.MethodPut {
		t.Errorf("method %s, want PUT (replace the whole group on success)", req.method)
	}
	if want := "/metrics/job/billing-report/instance/pod-1"; req.path != want {
		t.Errorf("path %s, want %s", req.path, want)
	}
	if !strings.HasPrefix(req.contentType, "text/plain") {
		t.Errorf("content type %q, want text/plain", req.contentType)
	}
	end := float64(t1.Unix()) + 0.5
	want := map[string]float64{
		LastSuccessTimestamp:    end,
		LastCompletionTimestamp: end,
		Duration:                90.5,
		LastRunSuccess:          1,
		PeriodsProcessed:        3,
		PeriodsRemaining:        2,
		Transactions:            1234,
		Rejects:                 5,
		Duplicates:              7,
		Lag:                     3720.5,
		Rechecks:                4,
		RechecksRemaining:       1,
		Restatements:            2,
		LateItems:               9,
		StatementsIssued:        2,
		MonthsClosed:            1,
		PriorPeriodAdjustments:  3,
		UnlistedAgencies:        4,
	}
	for name, v := range want {
		if got := gaugeValue(t, req.families, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if len(req.families) != len(want) {
		t.Errorf("pushed %v, want exactly %v", slices.Sorted(maps.Keys(req.families)), slices.Sorted(maps.Keys(want)))
	}
}

func TestPushFailure(t *testing.T) {
	g, srv := newGateway(t)
	r := sampleRun(false)
	r.Instance = ""
	if err := Push(context.Background(), srv.URL, r, srv.Client()); err != nil {
		t.Fatal(err)
	}
	req := g.last()
	if req.method != http.MethodPost {
		t.Errorf("method %s, want POST (keep the previous last success)", req.method)
	}
	if want := "/metrics/job/billing-report"; req.path != want {
		t.Errorf("path %s, want %s", req.path, want)
	}
	if _, ok := req.families[LastSuccessTimestamp]; ok {
		t.Errorf("failed run sent %s", LastSuccessTimestamp)
	}
	if got := gaugeValue(t, req.families, LastRunSuccess); got != 0 {
		t.Errorf("%s = %v, want 0", LastRunSuccess, got)
	}
	if got := gaugeValue(t, req.families, LastCompletionTimestamp); got != float64(t1.Unix())+0.5 {
		t.Errorf("%s = %v, want the failed run's end", LastCompletionTimestamp, got)
	}
	if got := gaugeValue(t, req.families, PeriodsRemaining); got != 2 {
		t.Errorf("%s = %v, want 2", PeriodsRemaining, got)
	}
	if len(req.families) != 17 {
		t.Errorf("pushed %d metrics, want 17: %v", len(req.families), slices.Sorted(maps.Keys(req.families)))
	}
}

// A failure after a success must leave the success timestamp where it was,
// while the last-run gauges move on.
func TestFailureKeepsLastSuccess(t *testing.T) {
	g, srv := newGateway(t)
	ok := sampleRun(true)
	bad := sampleRun(false)
	bad.Start, bad.End = t0.Add(15*time.Minute), t0.Add(16*time.Minute)
	for _, r := range []Run{ok, bad} {
		if err := Push(context.Background(), srv.URL, r, srv.Client()); err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	grp := g.groups["/metrics/job/billing-report/instance/pod-1"]
	g.mu.Unlock()
	if got, want := gaugeValue(t, grp, LastSuccessTimestamp), float64(t1.Unix())+0.5; got != want {
		t.Errorf("after a failed run %s = %v, want the earlier success %v", LastSuccessTimestamp, got, want)
	}
	if got, want := gaugeValue(t, grp, LastCompletionTimestamp), float64(bad.End.Unix()); got != want {
		t.Errorf("%s = %v, want the failed run's end %v", LastCompletionTimestamp, got, want)
	}
	if got := gaugeValue(t, grp, LastRunSuccess); got != 0 {
		t.Errorf("%s = %v, want 0", LastRunSuccess, got)
	}
}

func TestPushPath(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	tests := []struct {
		job, instance, want string
	}{
		{"billing-report", "", "/metrics/job/billing-report"},
		{"billing-report", "10.0.0.7:9000", "/metrics/job/billing-report/instance/10.0.0.7%3A9000"}, // QueryEscape; the gateway unescapes,
		{"team/billing", "a/b", "/metrics/job@base64/" + b64([]byte("team/billing")) + "/instance@base64/" + b64([]byte("a/b"))},
	}
	for _, tt := range tests {
		t.Run(tt.job+"|"+tt.instance, func(t *testing.T) {
			g, srv := newGateway(t)
			r := sampleRun(true)
			r.Job, r.Instance = tt.job, tt.instance
			if err := Push(context.Background(), srv.URL+"/", r, srv.Client()); err != nil {
				t.Fatal(err)
			}
			if got := g.last().path; got != tt.want {
				t.Errorf("path %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPushContextCanceled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Push(ctx, srv.URL, sampleRun(true), srv.Client())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("error %q does not name the URL %s", err, srv.URL)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Push returned after %v; the context should have stopped it", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := Push(ctx, srv.URL, sampleRun(false), srv.Client()); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: err = %v, want context.Canceled", err)
	}
}

func TestPushErrorStatus(t *testing.T) {
	g, srv := newGateway(t)
	g.status = http.StatusBadRequest
	err := Push(context.Background(), srv.URL, sampleRun(true), srv.Client())
	if err == nil {
		t.Fatal("Push succeeded against a gateway answering 400")
	}
	for _, want := range []string{srv.URL, "400"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestPushBasicAuthFromURL(t *testing.T) {
	g, srv := newGateway(t)
	g.status = http.StatusInternalServerError
	u := strings.Replace(srv.URL, "http://", "http://pusher:s3cret@", 1)
	err := Push(context.Background(), u, sampleRun(true), srv.Client())
	if err == nil {
		t.Fatal("Push succeeded against a gateway answering 500")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
	if req := g.last(); req.user != "pusher" || req.pass != "s3cret" {
		t.Errorf("basic auth = %q:%q, want pusher:s3cret", req.user, req.pass)
	}
}

func TestPushInvalid(t *testing.T) {
	g, srv := newGateway(t)
	tests := []struct {
		name    string
		url     string
		edit    func(*Run)
		wantErr string
	}{
		{"empty url", "", nil, "URL is empty"},
		{"bad scheme", "ftp://gw:9091", nil, `scheme "ftp"`},
		{"query", srv.URL + "?x=1", nil, "query"},
		{"empty job", srv.URL, func(r *Run) { r.Job = "" }, "job is empty"},
		{"zero end", srv.URL, func(r *Run) { r.End = time.Time{} }, "end time is zero"},
		{"zero start", srv.URL, func(r *Run) { r.Start = time.Time{} }, "start time is zero"},
		{"end before start", srv.URL, func(r *Run) { r.End = r.Start.Add(-time.Second) }, "before start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleRun(true)
			if tt.edit != nil {
				tt.edit(&r)
			}
			err := Push(context.Background(), tt.url, r, srv.Client())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if n := g.count(); n != 0 {
		t.Errorf("gateway got %d requests for invalid input, want 0", n)
	}
}

// TestPushVerify: verify pushes its own group, so that a run's PUT does not
// delete it and it does not replace the run's metrics.
func TestPushVerify(t *testing.T) {
	g, srv := newGateway(t)
	err := PushVerify(context.Background(), srv.URL, Verify{Job: "billing-report", End: t1, Periods: 24, Differences: 2}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	req := g.last()
	if req.method != http.MethodPut || req.path != "/metrics/job/billing-report/command/verify" {
		t.Errorf("%s %s, want PUT /metrics/job/billing-report/command/verify", req.method, req.path)
	}
	for name, v := range map[string]float64{VerifyPeriods: 24, VerifyDifferences: 2, VerifyTimestamp: float64(t1.Unix()) + 0.5} {
		if got := gaugeValue(t, req.families, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if err := PushVerify(context.Background(), srv.URL, Verify{}, srv.Client()); !errors.Is(err, ErrInvalidRun) {
		t.Errorf("empty Verify: %v, want ErrInvalidRun", err)
	}
}

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/metrics"
)

// pushRec is one request to the Pushgateway stand-in.
type pushRec struct {
	method, path string
	metrics      map[string]float64
}

// pushgateway is a Pushgateway stand-in on loopback that records pushes
// (text exposition format).
func pushgateway(t *testing.T) (string, func() []pushRec) {
	t.Helper()
	var mu sync.Mutex
	var recs []pushRec
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := pushRec{method: r.Method, path: r.URL.Path, metrics: map[string]float64{}}
		for _, line := range strings.Split(string(body), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, val, ok := strings.Cut(line, " ")
			f, err := strconv.ParseFloat(val, 64)
			if !ok || err != nil {
				t.Errorf("pushed line %q is not `name value`", line)
			}
			rec.metrics[name] = f
		}
		mu.Lock()
		recs = append(recs, rec)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []pushRec {
		mu.Lock()
		defer mu.Unlock()
		out := recs
		recs = nil
		return out
	}
}

// TestOpsMetricsPush runs reportjob with metrics.pushgateway_url set and
// checks what reaches a Pushgateway stand-in: PUT with the last-success
// timestamp after a success, POST without it after a failure, the counts
// of the run's summary line, and no push for a dry run.
func TestOpsMetricsPush(t *testing.T) {
	url, pushes := pushgateway(t)
	h := newHarness(t, harnessOptions{top: fmt.Sprintf("metrics: {pushgateway_url: %q}", url),
		extra: "  max_periods_per_run: 3"})
	opsPut(h, opsTime("2024-03-01T00:00:00Z"), opsTime("2024-03-01T06:00:00Z"), 4,
		opsTime("2024-03-01T01:20:00Z"), opsTime("2024-03-01T04:20:00Z"))

	check := func(what string, sum map[string]any, rec pushRec) {
		t.Helper()
		for name, field := range map[string]string{
			metrics.PeriodsProcessed: "periods_processed", metrics.PeriodsRemaining: "periods_remaining",
			metrics.Transactions: "transactions", metrics.Rejects: "rejects", metrics.Duplicates: "duplicates_dropped",
		} {
			got, ok := rec.metrics[name]
			if !ok || got != float64(opsInt(t, sum, field)) {
				t.Errorf("%s: pushed %s = %v (present %v), summary %s = %v", what, name, got, ok, field, sum[field])
			}
		}
		if ts := rec.metrics[metrics.LastCompletionTimestamp]; time.Since(time.Unix(int64(ts), 0)) > time.Minute {
			t.Errorf("%s: %s = %v, not the time of the run", what, metrics.LastCompletionTimestamp, ts)
		}
		if d, ok := rec.metrics[metrics.Duration]; !ok || d < 0 || d > 60 {
			t.Errorf("%s: %s = %v", what, metrics.Duration, d)
		}
	}

	started := time.Now()
	sum := h.mustRun(exitOK, "run", "--now", "2024-03-01T06:02:00Z")
	recs := pushes()
	if len(recs) != 1 {
		t.Fatalf("a run pushed %d times, want 1: %+v", len(recs), recs)
	}
	rec := recs[0]
	if rec.method != http.MethodPut || rec.path != "/metrics/job/e2e" {
		t.Errorf("success pushed with %s %s, want PUT /metrics/job/e2e", rec.method, rec.path)
	}
	check("success", sum, rec)
	if opsInt(t, sum, "periods_processed") != 3 || opsInt(t, sum, "periods_remaining") != 3 ||
		opsInt(t, sum, "transactions") != 12 || opsInt(t, sum, "rejects") != 1 {
		t.Fatalf("success summary: %v", sum)
	}
	ls, ok := rec.metrics[metrics.LastSuccessTimestamp]
	if !ok || ls < float64(started.Unix()) || rec.metrics[metrics.LastRunSuccess] != 1 {
		t.Errorf("success: %s = %v (present %v), %s = %v", metrics.LastSuccessTimestamp, ls, ok,
			metrics.LastRunSuccess, rec.metrics[metrics.LastRunSuccess])
	}
	// lag: --now 06:02 minus checkpoint 03:00.
	if lag := rec.metrics[metrics.Lag]; lag != (3*time.Hour + 2*time.Minute).Seconds() {
		t.Errorf("success: %s = %v, want %v", metrics.Lag, lag, (3*time.Hour + 2*time.Minute).Seconds())
	}

	// A dry run or a backfill by hand pushes nothing: the metrics describe
	// the scheduled job.
	h.mustRun(exitOK, "run", "--dry-run", "--now", "2024-03-01T06:02:00Z")
	h.mustRun(exitOK, "run", "--backfill", "--from", "2024-03-01", "--to", "2024-03-01T01:00:00Z", "--now", "2024-03-01T06:02:00Z")
	if recs := pushes(); len(recs) != 0 {
		t.Errorf("a dry run or backfill pushed %+v", recs)
	}

	// The next run fails at its second period (04:00): a file stands where
	// the period's summary folder must go.
	if err := os.MkdirAll(filepath.Join(h.dir, "reports", "summary"), 0o750); err != nil {
		t.Fatal(err)
	}
	h.writeFile(filepath.Join("reports", "summary", "period=20240301T0400Z"), "in the way")
	out, errs, code := h.run("run", "--now", "2024-03-01T06:02:00Z")
	if code != exitFailed {
		t.Fatalf("failing run: exit %d\n%s\n%s", code, out, errs)
	}
	sum = lastJSON(t, out)
	if sum["status"] != "failed" || opsInt(t, sum, "periods_processed") != 1 || opsInt(t, sum, "periods_remaining") != 2 {
		t.Fatalf("failing run summary: %v", sum)
	}
	recs = pushes()
	if len(recs) != 1 {
		t.Fatalf("a failed run pushed %d times, want 1", len(recs))
	}
	rec = recs[0]
	if rec.method != http.MethodPost || rec.path != "/metrics/job/e2e" {
		t.Errorf("failure pushed with %s %s, want POST /metrics/job/e2e", rec.method, rec.path)
	}
	if v, ok := rec.metrics[metrics.LastSuccessTimestamp]; ok {
		t.Errorf("failure pushed %s = %v: it must keep the last success's", metrics.LastSuccessTimestamp, v)
	}
	if v, ok := rec.metrics[metrics.LastRunSuccess]; !ok || v != 0 {
		t.Errorf("failure: %s = %v (present %v), want 0", metrics.LastRunSuccess, v, ok)
	}
	check("failure", sum, rec)

	// A run that finds the lease held (here: another process has the
	// embedded file) did not run: it pushes nothing, so the holder's
	// metrics stand.
	h.withStore(func(s *store) { h.mustRun(exitLeaseHeld, "run", "--now", "2024-03-01T06:02:00Z") })
	if recs := pushes(); len(recs) != 0 {
		t.Errorf("a run that found the lease held pushed %+v", recs)
	}
}

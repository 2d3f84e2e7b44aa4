//go:build linux

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/config"
)

// TestDeliveryEndpointDown: an endpoint that answers 503, then times out,
// then drops the connection is visible in the run's summary, in status
// and in the pushed metrics, and never fails the run; once it is back,
// the next run delivers every event exactly once (by the receiver's
// count of accepted webhook-ids).
func TestDeliveryEndpointDown(t *testing.T) {
	t.Parallel()
	bin := procBinary(t)
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var pushed []string
			gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				pushed = append(pushed, string(b))
				mu.Unlock()
			}))
			defer gw.Close()
			d := newDlv(t, bin, backend, "metrics: {pushgateway_url: \""+gw.URL+"\"}")
			ep := config.EndpointID(d.rcv.srv.URL + "/hook")
			for i, mode := range []string{"503", "timeout", "drop"} {
				d.rcv.mode.Store(mode)
				sum := d.r.run(dlvNow, nil) // exit 0: a failing endpoint never fails the run
				dl := sum["delivery"].(map[string]any)
				failedEvents := 0
				for _, f := range dl["failures"].([]any) {
					fm := f.(map[string]any)
					if fm["kind"] == "event" {
						failedEvents++
						if fm["target"] != ep || fm["attempts"] != float64(i+1) {
							t.Errorf("%s: failure %v, want endpoint %s, attempt %d", mode, fm, ep, i+1)
						}
					}
				}
				if failedEvents == 0 {
					t.Fatalf("%s: no event failed: %v", mode, dl)
				}
				out := procRun(t, bin, d.r.h, nil, "status", "--now", dlvNow)
				if !strings.Contains(out.stdout, "event "+ep+": "+string(rune('0'+i+1))+" attempt(s)") {
					t.Errorf("%s: status does not show the failing endpoint:\n%s", mode, out.stdout)
				}
				mu.Lock()
				last := pushed[len(pushed)-1]
				mu.Unlock()
				if !strings.Contains(last, `reportjob_delivery_target_failing{kind="event",target="`+ep+`"}`) ||
					!strings.Contains(last, "reportjob_delivery_pending") || !strings.Contains(last, "reportjob_delivery_failures") {
					t.Errorf("%s: pushed metrics lack the failing endpoint:\n%s", mode, last)
				}
			}
			if len(d.rcv.counts()) != 0 {
				t.Fatalf("the endpoint accepted %v while down", d.rcv.counts())
			}
			d.rcv.mode.Store("ok")
			d.r.run(dlvNow, nil)
			_, events, _ := d.expected(t)
			counts := d.rcv.counts()
			for id := range events {
				if counts[id] != 1 {
					t.Errorf("event %s accepted %d times once the endpoint is back, want 1", id, counts[id])
				}
			}
			if len(counts) != len(events) || d.rcv.badSig.Load() != 0 {
				t.Errorf("accepted %v, %d bad signatures", counts, d.rcv.badSig.Load())
			}
			out := procRun(t, bin, d.r.h, nil, "status", "--now", dlvNow)
			if strings.Contains(out.stdout, "event "+ep) {
				t.Errorf("status still shows the endpoint failing:\n%s", out.stdout)
			}
		})
	}
}

package job_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/job"
)

// TestPeriodStagesLogged checks the DEBUG line that says where a period's
// build spent its time: one line per built period, every step timed.
func TestPeriodStagesLogged(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(day0, day0.Add(2*time.Hour), 5)
	var buf bytes.Buffer
	j := e.job("a")
	j.Log = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.run(j, job.RunOptions{Now: day0.Add(2*time.Hour + 5*time.Minute)})

	var lines int
	for _, raw := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var l map[string]any
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if l["msg"] != "period stages" {
			continue
		}
		lines++
		for _, k := range []string{"read_ms", "dedupe_ms", "aggregate_ms", "encode_ms", "upload_ms", "commit_ms"} {
			if v, ok := l[k].(float64); !ok || v < 0 {
				t.Errorf("period stages %v: %s = %v, want a duration in ms", l[job.LogPeriod], k, l[k])
			}
		}
	}
	if lines != 2 {
		t.Errorf("%d period stages lines, want 2 (one per period)\n%s", lines, buf.String())
	}
}

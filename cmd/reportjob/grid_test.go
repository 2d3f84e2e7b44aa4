package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// TestVerifyRepairGrid (issue 15 point 5) through the binary: a job that
// went live on 2024-03-02 with hourly periods, then switched to 15m; the
// daily `verify --last 3d --repair` invents no period before go-live and
// none over the delivered hours, exits 0, and every transaction after
// go-live is billed exactly once (dedupe_window 0).
func TestVerifyRepairGrid(t *testing.T) {
	h := newHarness(t, harnessOptions{start: "2024-03-02", extra: "  dedupe_window: 0\n  recheck_after: []\n"})
	h.mustRun(0, "init")
	golive := time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)
	var lines []string
	tx := func(id string, at time.Time) {
		lines = append(lines, fmt.Sprintf(`{"transaction_id":%q,"agency_id":"acme","amount":"10.00","currency":"USD","recorded_at":%q}`,
			id, at.Format(time.RFC3339)))
	}
	tx("before-golive", golive.Add(-14*time.Hour))
	want := 0
	for m := 5; m < 4*60; m += 20 {
		tx(fmt.Sprintf("t-%d", m), golive.Add(time.Duration(m)*time.Minute))
		want++
	}
	file := h.writeFile("tx.jsonl", strings.Join(lines, "\n")+"\n")
	h.mustRun(0, "ingest", "--file", file, "--allow-late", "--now", "2024-03-02T05:00:00Z")
	h.mustRun(0, "run", "--now", "2024-03-02T02:05:00Z")

	cfg, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, []byte(strings.Replace(string(cfg), "period: 1h", "period: 15m", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustRun(0, "run", "--now", "2024-03-02T04:05:00Z")
	for _, args := range [][]string{{"--repair"}, {}} {
		sum := h.mustRun(0, append([]string{"verify", "--last", "3d", "--now", "2024-03-02T04:30:00Z"}, args...)...)
		if sum["differ"] != float64(0) || sum["periods"] != float64(2+9) {
			t.Fatalf("verify --last 3d %v: %v; want the 2 hours and 9 quarters (04:00 not delivered yet), no difference", args, sum)
		}
	}
	var billed int64
	var periods []string
	sk := h.sink()
	for key := range h.objects() {
		if !isPeriodManifest(key) {
			continue
		}
		m, err := report.ParseManifest(h.read(sk, key))
		if err != nil {
			t.Fatal(err)
		}
		if m.PeriodStart.Before(golive) {
			t.Errorf("%s: a period before report.start", key)
		}
		billed += m.Transactions
		periods = append(periods, m.Period().String())
	}
	if billed != int64(want) || len(periods) != 10 {
		t.Fatalf("billed %d transactions in %d periods %v; want %d in 10", billed, len(periods), periods, want)
	}
	statementsOf(h, 10)
}

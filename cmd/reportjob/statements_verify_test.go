package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStatementsVerify: verify covers the months of its range. A lost
// agency statement file and a draft that misses a period are reported
// (exit 4, month_differences); --repair publishes a new draft revision;
// verify then finds the month whole. On both stacks.
func TestStatementsVerify(t *testing.T) {
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) {
			h := newHarness(t, harnessOptions{backend: backend, start: "2026-03-01",
				top: "statements: {agency_files: [csv, parquet]}\n"})
			h.mustRun(0, "init")
			var lines []string
			for i := 0; i < 6; i++ {
				lines = append(lines, fmt.Sprintf(`{"transaction_id":"v-%d","agency_id":"acme","amount":"10.00","currency":"USD","recorded_at":%q}`,
					i, time.Date(2026, 3, 1, i/2, 10, 0, 0, time.UTC).Format(time.RFC3339)))
			}
			h.mustRun(0, "ingest", "--file", h.writeFile("tx.jsonl", strings.Join(lines, "\n")+"\n"), "--allow-late", "--now", "2026-03-01T05:00:00Z")
			h.mustRun(0, "run", "--now", "2026-03-01T03:05:00Z")
			verify := []string{"verify", "--from", "2026-03-01", "--to", "2026-03-01T03:00:00Z", "--now", "2026-03-01T03:10:00Z"}
			if sum := h.mustRun(0, verify...); sum["months"] != float64(1) || sum["months_differ"] != float64(0) {
				t.Fatalf("verify of a whole month: %v", sum)
			}
			var lost string
			for key := range h.objects() {
				if strings.HasPrefix(key, "agencies/agency=acme/month=2026-03/statement-") && strings.HasSuffix(key, ".csv") {
					lost = key
				}
			}
			if lost == "" {
				t.Fatal("no statement CSV of acme")
			}
			if err := h.sink().Delete(context.Background(), lost); err != nil {
				t.Fatal(err)
			}
			sum := h.mustRun(exitDiffers, verify...)
			if sum["months_differ"] != float64(1) || !strings.Contains(fmt.Sprint(sum["month_differences"]), lost) {
				t.Fatalf("verify after deleting %s: %v", lost, sum)
			}
			sum = h.mustRun(exitDiffers, append(verify, "--repair")...)
			if sum["status"] != "repaired" {
				t.Fatalf("verify --repair: %v", sum)
			}
			if sum := h.mustRun(0, verify...); sum["months_differ"] != float64(0) {
				t.Fatalf("verify after the repair: %v", sum)
			}
			st := h.mustRun(0, "statement", "--month", "2026-03")
			if st["statement_revision"] != float64(2) || st["statement_status"] != "draft" {
				t.Fatalf("statement after the repair: %v", st)
			}
		})
	}
}

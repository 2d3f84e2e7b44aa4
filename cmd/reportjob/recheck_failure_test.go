package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecheckFailureExit: through the CLI on the embedded store, a
// delivered period whose summary is corrupt in the sink fails its recheck;
// the younger period's recheck still restates it, the run exits 1 with
// status "failed", "rechecks_failed": 1 and the period named in the
// error, and the failed recheck stays owed: once the file is restored the
// next run restates that period and exits 0.
func TestRecheckFailureExit(t *testing.T) {
	h := newHarness(t, harnessOptions{extra: "  recheck_after: [24h]"})
	h.mustRun(exitOK, "init")
	line := func(id, at string) string {
		return fmt.Sprintf(`{"transaction_id":%q,"agency_id":"acme","amount":"10.00","currency":"USD","recorded_at":%q}`+"\n", id, at)
	}
	h.mustRun(exitOK, "ingest", "--allow-late", "--now", "2024-03-01T02:02:00Z", "--file",
		h.writeFile("a.jsonl", line("t-0", "2024-03-01T00:05:00Z")+line("t-1", "2024-03-01T01:05:00Z")))
	h.mustRun(exitOK, "run", "--now", "2024-03-01T02:02:00Z") // 00:00 and 01:00, each owing a recheck at end+24h
	h.mustRun(exitOK, "ingest", "--allow-late", "--now", "2024-03-01T02:03:00Z", "--file",
		h.writeFile("b.jsonl", line("t-late-0", "2024-03-01T00:50:00Z")+line("t-late-1", "2024-03-01T01:50:00Z")))
	matches, err := filepath.Glob(filepath.Join(h.dir, "reports", "summary", "period=20240301T0000Z", "summary-*.parquet"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("summary of 00:00: %q %v", matches, err)
	}
	good, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(matches[0], []byte("not a parquet file"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errs, code := h.run("run", "--now", "2024-03-02T02:00:00Z")
	sum := lastJSON(t, out)
	if code != exitFailed || sum["status"] != "failed" || sum["rechecks"] != float64(1) || sum["rechecks_failed"] != float64(1) ||
		sum["restated"] != float64(1) || !strings.Contains(fmt.Sprint(sum["error"]), "20240301T0000Z") {
		t.Fatalf("run with an unreadable summary: exit %d, summary %v\nstderr:\n%s", code, sum, errs)
	}
	if err := os.WriteFile(matches[0], good, 0o644); err != nil {
		t.Fatal(err)
	}
	sum = h.mustRun(exitOK, "run", "--now", "2024-03-02T02:30:00Z")
	if sum["status"] != "ok" || sum["rechecks"] != float64(1) || sum["restated"] != float64(1) || sum["rechecks_failed"] != nil {
		t.Fatalf("retry: %v", sum)
	}
}

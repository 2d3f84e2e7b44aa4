package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStatementNotFound: a month or an agency with no statement is a usage
// answer, not a failure: exit 2, status not_found, the flag and its value
// named (issue 31). A flag statement does not have (--number) is bad
// usage; a month before any statement exists is not_found too.
func TestStatementNotFound(t *testing.T) {
	h := newHarness(t, harnessOptions{start: "2026-03-01"})
	h.mustRun(0, "init")
	sum := h.mustRun(exitUsage, "statement")
	if sum["status"] != "not_found" || !strings.Contains(fmt.Sprint(sum["error"]), "no statement") {
		t.Fatalf("statement before any: %v", sum)
	}
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"transaction_id":"s-%d","agency_id":"acme","amount":"10.00","currency":"USD","recorded_at":%q}`,
			i, time.Date(2026, 3, 1, i/2, 10, 0, 0, time.UTC).Format(time.RFC3339)))
	}
	h.mustRun(0, "ingest", "--file", h.writeFile("tx.jsonl", strings.Join(lines, "\n")+"\n"), "--allow-late", "--now", "2026-03-01T03:00:00Z")
	h.mustRun(0, "run", "--now", "2026-03-01T02:05:00Z")
	if sum := h.mustRun(0, "statement", "--month", "2026-03", "--agency", "acme"); sum["status"] != "ok" || sum["agencies"] != float64(1) {
		t.Fatalf("statement of acme: %v", sum)
	}
	for _, tc := range []struct {
		args   []string
		status string
		want   []string
	}{
		{[]string{"--month", "2099-01"}, "not_found", []string{"statement --month 2099-01", "no statement", "months with one: 2026-03"}},
		{[]string{"--month", "2026-03", "--agency", "nobody"}, "not_found", []string{`statement --agency "nobody"`, "no statement", "2026-03"}},
		{[]string{"--agency", "nobody", "--json"}, "not_found", []string{`statement --agency "nobody"`}},
		{[]string{"--month", "2026-13"}, "bad_usage", []string{"statement --month"}},
		{[]string{"--number", "7"}, "bad_usage", []string{"flag provided but not defined: -number"}},
	} {
		out, errs, code := h.run(append([]string{"statement"}, tc.args...)...)
		sum := lastJSON(t, out)
		if code != exitUsage || sum["status"] != tc.status {
			t.Errorf("statement %v: exit %d status %v, want exit 2 status %s\n%s\n%s", tc.args, code, sum["status"], tc.status, out, errs)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(fmt.Sprint(sum["error"]), w) {
				t.Errorf("statement %v: error %q does not say %q", tc.args, sum["error"], w)
			}
		}
	}
}

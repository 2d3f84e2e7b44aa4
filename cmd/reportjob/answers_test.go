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
		{[]string{"--number", "7"}, "bad_usage", []string{"statement --number", `"7"`, "PREFIX-YYYYMM-NNNNNN"}},
		{[]string{"--number", "e2e-202603-000099"}, "not_found", []string{"statement --number e2e-202603-000099", "no statement"}},
		{[]string{"--number", "other-202603-000001"}, "not_found", []string{`its prefix "other" is not this job's`}},
		{[]string{"--number", "e2e-209901-000001"}, "not_found", []string{"its month 2099-01 has none"}},
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

// TestLookupsWithoutLineItems: periods published with report.line_items
// false have no lines to list. `transactions --agency` names them (table
// and summary) instead of leaving their lines out without a word, and
// `transactions --id` of an id such a period billed says so (status ok)
// rather than not_found (issue 31).
func TestLookupsWithoutLineItems(t *testing.T) {
	D := lkDates(lkBase())
	h := newHarness(t, harnessOptions{start: D("2024-03-01")})
	h.mustRun(0, "init")
	tx := func(id, agency, at string) string {
		return fmt.Sprintf(`{"transaction_id":%q,"agency_id":%q,"amount":"10.00","currency":"USD","recorded_at":%q}`, id, agency, D(at))
	}
	src := h.writeFile("tx.jsonl", strings.Join([]string{
		tx("ord-1", "acme", "2024-03-01T00:10:00Z"),
		tx("ord-2", "acme", "2024-03-01T01:10:00Z"),
		tx("ord-3", "beta", "2024-03-01T01:20:00Z"),
	}, "\n")+"\n")
	h.mustRun(0, "ingest", "--file", src, "--allow-late", "--now", D("2024-03-01T03:00:00Z"))
	h.mustRun(0, "run", "--now", D("2024-03-01T01:05:00Z"))
	h.env = append(h.env, "REPORTJOB_REPORT_LINE_ITEMS=false")
	h.mustRun(0, "run", "--now", D("2024-03-01T02:05:00Z"))
	p1 := D("20240301T0100Z")

	out := h.mustRunOut("transactions", "--agency", "acme")
	sum := lastJSON(t, out)
	if sum["lines"] != float64(1) || fmt.Sprint(sum["periods_without_line_items"]) != "["+p1+"]" ||
		!strings.Contains(out, "period "+p1+` revision 1 billed 1 transaction(s) of agency "acme" but delivered no line items`) ||
		!strings.Contains(fmt.Sprint(sum["note"]), "1 period(s) read billed the agency without line items") {
		t.Fatalf("transactions --agency acme:\n%s", out)
	}
	if rows, sum := h.lkPage(0, "--agency", "beta"); len(rows) != 0 || fmt.Sprint(sum["periods_without_line_items"]) != "["+p1+"]" {
		t.Fatalf("transactions --agency beta --json: %v %v", rows, sum)
	}
	// An agency of neither period: nothing to name.
	if _, sum := h.lkPage(0, "--agency", "gamma"); sum["periods_without_line_items"] != nil {
		t.Fatalf("transactions --agency gamma: %v", sum)
	}

	out = h.mustRunOut("transactions", "--id", "ord-2")
	sum = lastJSON(t, out)
	if sum["status"] != "ok" || sum["billed"] != float64(0) || fmt.Sprint(sum["periods_without_line_items"]) != "["+p1+"]" ||
		!strings.Contains(out, "no lines:     period "+p1+" revision 1 billed the id (dedupe index) but delivered no line items") ||
		strings.Contains(out, "not found") {
		t.Fatalf("transactions --id ord-2:\n%s", out)
	}
	out = h.mustRunOut("transactions", "--id", "ord-1")
	if sum := lastJSON(t, out); sum["status"] != "ok" || sum["billed"] != float64(1) || sum["periods_without_line_items"] != nil {
		t.Fatalf("transactions --id ord-1:\n%s", out)
	}
	// A range search names the periods it could not search.
	out = h.mustRunOut("transactions", "--id", "ord-9", "--from", D("2024-03-01"), "--to", D("2024-03-01T02:00:00Z"))
	if sum := lastJSON(t, out); sum["status"] != "not_found" || fmt.Sprint(sum["periods_without_line_items"]) != "["+p1+"]" ||
		!strings.Contains(fmt.Sprint(sum["note"]), "1 period(s) delivered no line items and could not be searched") {
		t.Fatalf("transactions --id ord-9 over a range:\n%s", out)
	}
}

// TestVerifyNotDelivered: verify over a range that goes past the
// checkpoint counts the periods not delivered yet apart from those it
// checked and found whole (issue 31: 24 periods, 3 delivered, said
// "ok":24).
func TestVerifyNotDelivered(t *testing.T) {
	h := newHarness(t, harnessOptions{start: "2026-03-01"})
	h.mustRun(0, "init")
	var lines []string
	for i := range 3 {
		lines = append(lines, fmt.Sprintf(`{"transaction_id":"v-%d","agency_id":"acme","amount":"10.00","currency":"USD","recorded_at":%q}`,
			i, time.Date(2026, 3, 1, i, 10, 0, 0, time.UTC).Format(time.RFC3339)))
	}
	h.mustRun(0, "ingest", "--file", h.writeFile("tx.jsonl", strings.Join(lines, "\n")+"\n"), "--allow-late", "--now", "2026-03-01T03:05:00Z")
	h.mustRun(0, "run", "--now", "2026-03-01T03:05:00Z")
	out, errs, code := h.run("verify", "--from", "2026-03-01", "--to", "2026-03-02", "--now", "2026-03-01T03:05:00Z")
	sum := lastJSON(t, out)
	if code != 0 || sum["status"] != "ok" || sum["periods"] != float64(24) || sum["ok"] != float64(3) || sum["not_delivered"] != float64(21) || sum["differ"] != float64(0) {
		t.Fatalf("verify of a day with 3 hours delivered: exit %d %v\n%s\n%s", code, sum, out, errs)
	}
	if n := strings.Count(out, "  not delivered yet"); n != 21 {
		t.Errorf("verify printed %d not delivered lines, want 21\n%s", n, out)
	}
}

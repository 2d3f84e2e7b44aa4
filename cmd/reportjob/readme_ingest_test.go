package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestIngestRefusedWording: the README's ingest examples (issue 11, point
// 10). The summary's error says whether anything was written, and an
// unknown field gets the closest known one suggested on stderr.
func TestIngestRefusedWording(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	line := func(id, field string) string {
		return fmt.Sprintf(`{"transaction_id":%q,"agency_id":"a","%s":"1.00","currency":"USD","recorded_at":"2024-03-01T10:05:12Z"}`, id, field)
	}
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{line("x0", "amout")}, "1 of 1 records refused (nothing was written): fix them and ingest them again"},
		{[]string{line("x0", "amout"), line("x1", "amount")}, "1 of 2 records refused (not written; the other one was written)"},
		{[]string{line("x0", "amout"), line("x1", "amount"), line("x2", "amount")}, "1 of 3 records refused (not written; the other 2 were written)"},
	} {
		f := h.writeFile("in.jsonl", strings.Join(c.lines, "\n")+"\n")
		out, errs, code := h.run("ingest", "--file", f, "--allow-late")
		if code != exitFailed {
			t.Errorf("%d lines: exit %d, want %d", len(c.lines), code, exitFailed)
		}
		if got, _ := lastJSON(t, out)["error"].(string); !strings.HasPrefix(got, c.want) {
			t.Errorf("%d lines: error %q, want it to start %q", len(c.lines), got, c.want)
		}
		if want := `line 1: amout "\"1.00\"": unknown field; did you mean amount?`; !strings.Contains(errs, want) {
			t.Errorf("%d lines: stderr lacks %q:\n%s", len(c.lines), want, errs)
		}
	}
}

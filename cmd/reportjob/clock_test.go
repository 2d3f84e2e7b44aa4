package main

import (
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/job"
)

// TestNowAheadRefused: `--now` more than job.MaxClockAhead ahead of the
// wall clock on a command that writes (run, a backfill, verify --repair)
// exits 2 and says why, and writes nothing: it would deliver the current
// hour before its items are in and mark rechecks done early. A dry run,
// verify without --repair and status may look ahead; a --now within the
// tolerance, or in the past, runs.
func TestNowAheadRefused(t *testing.T) {
	wall := time.Now().UTC()
	start := wall.Truncate(time.Hour).Add(-3 * time.Hour)
	h := newHarness(t, harnessOptions{start: start.Format(time.RFC3339)})
	h.putTx(bTx("tx-early", start.Add(10*time.Minute).Format(time.RFC3339), "10.00"))
	aheadT := wall.Add(3 * time.Hour)
	ahead := aheadT.Format(time.RFC3339)
	to := wall.Truncate(time.Hour).Add(2 * time.Hour).Format(time.RFC3339)
	from := start.Format(time.RFC3339)

	for _, args := range [][]string{
		{"run", "--now", ahead},
		{"run", "--backfill", "--from", from, "--to", to, "--now", ahead},
		{"verify", "--repair", "--from", from, "--to", to, "--now", ahead},
	} {
		out, errs, code := h.run(args...)
		if code != exitUsage || !strings.Contains(out+errs, "ahead of the wall clock") ||
			!strings.Contains(out+errs, "before their items are in") {
			t.Errorf("reportjob %s: exit %d, want %d with a message saying why\nstdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), code, exitUsage, out, errs)
		}
		if objs := h.objects(); len(objs) != 0 {
			t.Fatalf("reportjob %s wrote %d object(s), want none: %v", strings.Join(args, " "), len(objs), keysOf(objs))
		}
	}
	// Looking ahead without writing is allowed.
	due := aheadT.Add(-2*time.Minute).Truncate(time.Hour).Sub(start) / time.Hour
	if sum := h.mustRun(exitOK, "run", "--dry-run", "--now", ahead); sum["periods_processed"] != float64(due) {
		t.Errorf("run --dry-run --now %s: %v, want %d periods built", ahead, sum, due)
	}
	h.mustRun(exitOK, "status", "--json", "--now", ahead)
	if _, errs, code := h.run("verify", "--from", from, "--to", to, "--now", ahead); code == exitUsage {
		t.Errorf("verify (no --repair) --now %s: exit %d, want it to run\n%s", ahead, code, errs)
	}
	if objs := h.objects(); len(objs) != 0 {
		t.Fatalf("the dry runs wrote %d object(s), want none", len(objs))
	}
	// Within the tolerance: delivered up to the wall clock, no further.
	near := time.Now().UTC().Add(job.MaxClockAhead - time.Minute)
	sum := h.mustRun(exitOK, "run", "--now", near.Format(time.RFC3339))
	if want := near.Add(-2 * time.Minute).Truncate(time.Hour).Format(time.RFC3339); sum["checkpoint"] != want {
		t.Errorf("run --now %s: checkpoint %v, want %s", near.Format(time.RFC3339), sum["checkpoint"], want)
	}
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

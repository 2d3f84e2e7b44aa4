//go:build linux

package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// procInterrupt starts the binary on h's config, sends it SIGINT after
// delay and returns how it ended.
func procInterrupt(t *testing.T, h *harness, env []string, delay time.Duration, args ...string) procOut {
	t.Helper()
	cmd := procCmd(procBinary(t), h, env, args...)
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	return procWait(cmd, started)
}

// TestInterruptRun (issue 34 item 9): SIGINT stops run after the period
// in progress, exit 130, status interrupted, with what was done and how
// to go on; the next run continues from the checkpoint it left.
func TestInterruptRun(t *testing.T) {
	h := newHarness(t, harnessOptions{extra: "  max_periods_per_run: 48"})
	h.mustRun(0, "ingest", "--generate", "2000", "--from", "2024-03-01", "--to", "2024-03-03", "--allow-late", "--now", "2024-03-05")
	slow := []string{crashpoint.SlowEnvVar + "=" + string(crashpoint.AfterCheckpoint) + "=250ms"}
	now := "--now=2024-03-03T00:05:00Z"
	out := procInterrupt(t, h, slow, 2*time.Second, "run", now)
	sum := out.mustExit(t, 130, "run interrupted")
	done, _ := sum["periods_processed"].(float64)
	if sum["status"] != "interrupted" || done < 1 || done >= 48 {
		t.Fatalf("interrupted run: summary %v", sum)
	}
	msg, _ := sum["error"].(string)
	for _, want := range []string{"interrupted by SIGINT", "run the same command again"} {
		if !strings.Contains(msg, want) || !strings.Contains(out.stderr, want) {
			t.Errorf("interrupted run: error and stderr lack %q: %s\n%s", want, msg, out.stderr)
		}
	}
	if !strings.Contains(out.stderr, "stopping at the next safe point") {
		t.Errorf("interrupted run: stderr does not say it is stopping:\n%s", procTail(out.stderr, 10))
	}
	want := time.Date(2024, 3, 1, int(done), 0, 0, 0, time.UTC)
	if cp := procState(h).Checkpoint; !cp.Equal(want) {
		t.Errorf("checkpoint %s after %v periods, want %s", cp, done, want)
	}
	sum = h.mustRun(0, "run", now)
	if left, _ := sum["periods_processed"].(float64); left+done != 48 {
		t.Errorf("the next run processed %v periods after %v, want 48 in all", left, done)
	}
}

// TestInterruptIngest (item 9): SIGINT stops ingest --generate after the
// batch in flight: exit 130, what was written, and the command that
// writes the rest.
func TestInterruptIngest(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	out := procInterrupt(t, h, nil, 1500*time.Millisecond, "ingest", "--generate", "3000000", "--from", "2024-03-01", "--to", "2024-03-02",
		"--allow-late", "--now", "2024-03-05")
	sum := out.mustExit(t, 130, "ingest interrupted")
	written, _ := sum["written"].(float64)
	msg, _ := sum["error"].(string)
	if sum["status"] != "interrupted" || written >= 3000000 {
		t.Fatalf("interrupted ingest: summary %v", sum)
	}
	for _, want := range []string{"interrupted by SIGINT", "--seed 1 --from 2024-03-01T00:00:00Z --to 2024-03-02T00:00:00Z"} {
		if !strings.Contains(msg, want) {
			t.Errorf("interrupted ingest: error lacks %q: %s", want, msg)
		}
	}
}

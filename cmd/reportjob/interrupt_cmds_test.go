//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// interruptMsg checks an interrupted command's summary: status
// interrupted, and an error that says each of want.
func interruptMsg(t *testing.T, what string, sum map[string]any, want ...string) string {
	t.Helper()
	msg, _ := sum["error"].(string)
	if sum["status"] != "interrupted" {
		t.Errorf("%s: status %v, want interrupted: %v", what, sum["status"], sum)
	}
	for _, w := range append([]string{"interrupted by SIGINT"}, want...) {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error lacks %q: %s", what, w, msg)
		}
	}
	return msg
}

// TestInterruptIngestFile (issue 34 item 9): SIGINT stops ingest --file
// before the next line: exit 130, the lines read and records written,
// and the line the rest starts at; ingesting from there writes the rest.
//
// The input is a named pipe the test writes to, so where the signal lands
// does not depend on the machine's speed: the first half of the lines,
// then the signal, then (once the job says it is stopping) the rest.
func TestInterruptIngestFile(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	const n = 20000
	var all []string
	for i := range n {
		all = append(all, fmt.Sprintf(`{"transaction_id":"ord-%d","agency_id":"agency-%d","amount":"19.99","currency":"USD","recorded_at":"2024-03-01T%02d:%02d:%02dZ"}`+"\n",
			i, i%7, i/3600%24, i/60%60, i%60))
	}
	fifo := filepath.Join(h.dir, "input.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := procCmd(procBinary(t), h, nil, "ingest", "--file", fifo, "--allow-late", "--now", "2024-03-05")
	stderr := newWatchedBuffer("stopping at the next safe point")
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Join(all[:n/2], "")
	if _, err := io.WriteString(w, first); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stderr.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("no \"stopping\" line 30 s after SIGINT:\n%s", stderr.String())
	}
	go func() { // the job stops reading: the write ends with EPIPE
		io.WriteString(w, strings.Join(all[n/2:], ""))
		w.Close()
	}()
	out := procWait(cmd, started)
	w.Close()
	sum := out.mustExit(t, 130, "ingest --file interrupted")
	msg := interruptMsg(t, "ingest --file", sum, "records written", "tail -n +", "run the same command again")
	m := regexp.MustCompile(`input lines 1 to (\d+) read, (\d+) records written; to ingest the rest, from line (\d+)`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("interrupted ingest: no line numbers in %s", msg)
	}
	lines, _ := strconv.Atoi(m[1])
	written, _ := sum["written"].(float64)
	if next, _ := strconv.Atoi(m[3]); next != lines+1 || m[2] != strconv.Itoa(lines) || int(written) != lines || lines < 1 || lines >= n {
		t.Fatalf("interrupted ingest: %d lines read, %v written, rest from %s: %s", lines, written, m[3], msg)
	}
	rest := filepath.Join(h.dir, "rest.jsonl")
	if err := os.WriteFile(rest, []byte(strings.Join(all[lines:], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	sum = h.mustRun(0, "ingest", "--file", rest, "--allow-late", "--now", "2024-03-05")
	if got, _ := sum["written"].(float64); int(got)+lines != n {
		t.Errorf("the rest wrote %v after %d, want %d in all", got, lines, n)
	}
}

// watchedBuffer is a command's output, safe to read while it runs; seen
// is closed when the output first contains the watched text.
type watchedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	watch string
	seen  chan struct{}
}

func newWatchedBuffer(watch string) *watchedBuffer {
	return &watchedBuffer{watch: watch, seen: make(chan struct{})}
}

func (b *watchedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	had := strings.Contains(b.buf.String(), b.watch)
	b.buf.Write(p)
	if !had && strings.Contains(b.buf.String(), b.watch) {
		close(b.seen)
	}
	return len(p), nil
}

func (b *watchedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestInterruptVerify (item 9): SIGINT stops verify before the next
// period: exit 130, the whole range in from and to, what was checked, and
// the command that checks the rest.
func TestInterruptVerify(t *testing.T) {
	h := newHarness(t, harnessOptions{extra: "  max_periods_per_run: 48"})
	h.mustRun(0, "ingest", "--generate", "500", "--from", "2024-03-01", "--to", "2024-03-03", "--allow-late", "--now", "2024-03-05")
	now := "--now=2024-03-03T00:05:00Z"
	h.mustRun(0, "run", now)
	slow := []string{crashpoint.SlowEnvVar + "=" + string(crashpoint.AfterVerify) + "=250ms"}
	out := procInterrupt(t, h, slow, 2*time.Second, "verify", "--from", "2024-03-01", "--to", "2024-03-03", now)
	out.mustExit(t, 130, "verify interrupted")
	sum := lastJSON(t, out.stdout)
	msg := interruptMsg(t, "verify", sum, "periods checked, 0 differ, nothing changed", "statements were not checked")
	done, _ := sum["periods"].(float64)
	if sum["from"] != "2024-03-01T00:00:00Z" || sum["to"] != "2024-03-03T00:00:00Z" || done < 1 || done >= 48 || sum["ok"] != done {
		t.Fatalf("interrupted verify: summary %v", sum)
	}
	next := time.Date(2024, 3, 1, int(done), 0, 0, 0, time.UTC).Format(time.RFC3339)
	want := "run reportjob --config " + h.config + " verify --from " + next + " --to 2024-03-03T00:00:00Z --now 2024-03-03T00:05:00Z"
	if !strings.Contains(msg, want) {
		t.Fatalf("interrupted verify: error lacks %q: %s", want, msg)
	}
	sum = h.mustRun(0, "verify", "--from", next, "--to", "2024-03-03T00:00:00Z", now)
	if rest, _ := sum["periods"].(float64); rest+done != 48 {
		t.Errorf("the rest checked %v periods after %v, want 48 in all", rest, done)
	}
}

// TestInterruptDemo (item 9): SIGINT stops the demo while it generates
// and while it reports: exit 130, what it did, and to run it again.
func TestInterruptDemo(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	dir := filepath.Join(h.dir, "demo")
	out := procInterrupt(t, h, nil, 1500*time.Millisecond, "demo", "--dir", dir, "--transactions", "3000000")
	sum := out.mustExit(t, 130, "demo interrupted while generating")
	interruptMsg(t, "demo generating", sum, "of 3000000 transactions generated", "no report made", "run the demo again")

	slow := []string{crashpoint.SlowEnvVar + "=" + string(crashpoint.AfterCheckpoint) + "=300ms"}
	out = procInterrupt(t, h, slow, 3*time.Second, "demo", "--dir", dir, "--transactions", "500")
	sum = out.mustExit(t, 130, "demo interrupted while reporting")
	interruptMsg(t, "demo reporting", sum, "500 transactions generated", "periods reported in", "run the demo again")
}

//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/reportjob/reportjob/internal/report"
)

// openPTY opens a pseudo-terminal pair (Linux /dev/ptmx).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// ptyRun runs the binary in dir with stderr on a terminal and returns
// what the terminal received and stdout.
func ptyRun(t *testing.T, dir string, env []string, args ...string) (term, stdout string) {
	t.Helper()
	m, s := openPTY(t)
	defer m.Close()
	cmd := exec.Command(procBinary(t), args...)
	var out bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, s
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(m) // ends with EIO once the child has closed the terminal
		got <- b
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s", args, err, out.String())
	}
	select {
	case b := <-got:
		return string(b), out.String()
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal did not close")
	}
	return "", ""
}

// screen replays what a terminal received into the lines left on it:
// "\r\x1b[2K" erases the line being written, "\n" ends it (the terminal's
// "\r\n" is read as "\n").
func screen(term string) []string {
	term = strings.ReplaceAll(term, "\r\n", "\n")
	var lines []string
	var cur strings.Builder
	for len(term) > 0 {
		switch {
		case strings.HasPrefix(term, eraseLine):
			cur.Reset()
			term = term[len(eraseLine):]
		case term[0] == '\n':
			lines = append(lines, cur.String())
			cur.Reset()
			term = term[1:]
		default:
			cur.WriteByte(term[0])
			term = term[1:]
		}
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// TestSnagTerminalLogs (item 6): on a terminal, the logs are text lines
// above the progress bar, never on its line, and the bar shows an ETA
// and is gone at the end; log.format, when set, still decides the format.
func TestSnagTerminalLogs(t *testing.T) {
	dir := t.TempDir()
	snagWrite(t, filepath.Join(dir, "tx.jsonl"), snagTx)
	for _, tc := range []struct {
		name, config, prefix string
	}{
		{"unset", snagConfig, "time="},
		{"json", snagConfig + "log: {format: json}\n", `{"time":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			snagWrite(t, filepath.Join(dir, "config.yaml"), tc.config)
			snagWrite(t, filepath.Join(dir, "tx.jsonl"), snagTx)
			env := snagEnv(t)
			snagRun(t, dir, env, "ingest", "--file", "tx.jsonl", "--allow-late").mustExit(t, 0, "ingest")
			term, stdout := ptyRun(t, dir, env, "run", "--now=2026-03-01T11:05:00Z")
			if sum := lastJSON(t, stdout); sum["status"] != "ok" {
				t.Fatalf("run: %v", sum)
			}
			for _, want := range []string{"] period 1/11 20260301T0000Z", "] period 11/11 20260301T1000Z  ETA ", eraseLine} {
				if !strings.Contains(term, want) {
					t.Errorf("the terminal did not get %q:\n%q", want, term)
				}
			}
			lines := screen(term)
			published := 0
			for _, l := range lines {
				if !strings.HasPrefix(l, tc.prefix) {
					t.Errorf("a line left on the terminal is not a log line starting %q: %q", tc.prefix, l)
				}
				if strings.Contains(l, "period published") {
					published++
				}
			}
			if published != 11 {
				t.Errorf("%d period published lines, want 11:\n%s", published, strings.Join(lines, "\n"))
			}
		})
	}
}

// TestProgressBarETA: the ETA is the time per period so far times the
// periods left; a log line is written on a line of its own, the bar
// drawn again under it.
func TestProgressBarETA(t *testing.T) {
	var w bytes.Buffer
	b := newProgressBar(&w)
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return at }
	p := func(h int) report.Period { return report.PeriodAt(at.Add(time.Duration(h)*time.Hour), time.Hour) }
	b.set(0, 72, "period", p(0))
	at = at.Add(30 * time.Second)
	b.set(12, 72, "period", p(12))
	bar := "[###.................] period 13/72 20260301T1200Z  ETA 2m30s"
	if !strings.HasSuffix(w.String(), eraseLine+bar) {
		t.Fatalf("bar %q, want it to end with %q", w.String(), bar)
	}
	w.Reset()
	fmt.Fprintf(b, "log line\n")
	if want := eraseLine + "log line\n" + bar; w.String() != want {
		t.Errorf("log line written as %q, want %q", w.String(), want)
	}
	w.Reset()
	b.clear()
	fmt.Fprintf(b, "after\n")
	if want := eraseLine + "after\n"; w.String() != want {
		t.Errorf("after clear: %q, want %q", w.String(), want)
	}
}

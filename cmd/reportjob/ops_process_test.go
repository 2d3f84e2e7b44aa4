//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests that start real reportjob processes: several `run`s racing for one
// job, and `schedule` stopped by SIGTERM. Linux only: they shrink pipes
// with F_SETPIPE_SZ (below).

// TestOpsProcesses builds the binary once and runs the process tests.
func TestOpsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary")
	}
	bin := t.TempDir() + "/reportjob"
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("RaceEmbedded", func(t *testing.T) { opsRace(t, bin, "embedded") })
	t.Run("RaceDynamoDB", func(t *testing.T) { opsRace(t, bin, "aws") })
	t.Run("ScheduleSIGTERM", func(t *testing.T) { opsScheduleSIGTERM(t, bin) })
}

// fSetPipeSize is Linux's F_SETPIPE_SZ fcntl.
const fSetPipeSize = 1031

// opsStderrPipe returns a pipe that holds at most one page (4 KiB).
//
// The race test gives each process such a pipe for its stderr and reads
// none until all but one have exited. The process that got the job (the
// embedded file lock, or the DynamoDB lease) logs a few lines per period
// while it holds it, so it blocks on a full stderr, holding the job, until
// the others have tried and given up. That makes "the others exit 3"
// deterministic however fast the winner would otherwise be.
func opsStderrPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fSetPipeSize, 4096); errno != 0 {
		t.Fatalf("F_SETPIPE_SZ: %v", errno)
	}
	return r, w
}

// opsRace starts four `run` processes at once on one job with 24 periods
// due: exactly one processes them all, the others exit 3 saying who has
// the job; every period is delivered once and the checkpoint is at the end.
func opsRace(t *testing.T, bin, backend string) {
	const (
		procs = 4
		now   = "2024-03-01T06:05:00Z"
	)
	h := newHarness(t, harnessOptions{backend: backend, period: "15m"})
	if backend == "aws" {
		h.mustRun(exitOK, "init")
	}
	ing := h.mustRun(exitOK, "ingest", "--generate", "400", "--agencies", "5", "--from", "2024-03-01T00:00:00Z",
		"--to", "2024-03-01T06:00:00Z", "--allow-late", "--now", now)
	if opsInt(t, ing, "written") != 400 {
		t.Fatalf("ingest: %v", ing)
	}

	type proc struct {
		cmd    *exec.Cmd
		stdout bytes.Buffer
		stderr opsBuffer
		errR   *os.File
	}
	ps := make([]*proc, procs)
	exited := make(chan int, procs)
	for i := range ps {
		p := &proc{}
		r, w := opsStderrPipe(t)
		p.errR = r
		p.cmd = exec.Command(bin, "--config", h.config, "run", "--now", now)
		p.cmd.Env = append(os.Environ(), h.env...)
		p.cmd.Stdout = &p.stdout
		p.cmd.Stderr = w
		ps[i] = p
		defer r.Close()
		defer w.Close()
	}
	for i, p := range ps {
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.cmd.Stderr.(*os.File).Close()
		go func() {
			p.cmd.Wait()
			exited <- i
		}()
	}
	drain := func() {
		for _, p := range ps {
			go io.Copy(&p.stderr, p.errR)
		}
	}
	deadline := time.After(30 * time.Second)
	for n := 0; n < procs-1; n++ {
		select {
		case <-exited:
		case <-deadline:
			drain()
			for _, p := range ps {
				p.cmd.Process.Kill()
			}
			t.Fatalf("only %d of %d processes exited while the job was held", n, procs)
		}
	}
	drain()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		ps[0].cmd.Process.Kill()
		t.Fatal("the process holding the job did not finish")
	}

	host, _ := os.Hostname()
	var winners, processed int
	for i, p := range ps {
		code := p.cmd.ProcessState.ExitCode()
		sum := lastJSON(t, p.stdout.String())
		processed += opsInt(t, sum, "periods_processed")
		switch code {
		case exitOK:
			winners++
			if sum["status"] != "ok" || opsInt(t, sum, "periods_processed") != 24 || sum["checkpoint"] != "2024-03-01T06:00:00Z" {
				t.Errorf("process %d (the winner): %v", i, sum)
			}
		case exitLeaseHeld:
			if sum["status"] != "lease_held" || opsInt(t, sum, "periods_processed") != 0 {
				t.Errorf("process %d: %v", i, sum)
			}
			errMsg, _ := sum["error"].(string)
			switch backend {
			case "embedded":
				if !strings.Contains(errMsg, "in use by another process") || !strings.Contains(errMsg, h.dir) {
					t.Errorf("process %d: error %q does not say the store file is in use", i, errMsg)
				}
			case "aws":
				holder, _ := sum["lease_holder"].(string)
				if !strings.HasPrefix(holder, host+"/") || sum["lease_expires"] == nil {
					t.Errorf("process %d: lease_holder %q, lease_expires %v; want the holder's host/pid/run id", i, holder, sum["lease_expires"])
				}
				defer func() { // once the winner is known
					for _, w := range ps {
						if w.cmd.ProcessState.ExitCode() == exitOK {
							want := host + "/" + strconv.Itoa(w.cmd.Process.Pid) + "/" + fmt.Sprint(lastJSON(t, w.stdout.String())["run_id"])
							if holder != want {
								t.Errorf("process %d names holder %q, want the winner %q", i, holder, want)
							}
						}
					}
				}()
			}
		default:
			t.Errorf("process %d: exit %d, %v\nstderr:\n%s", i, code, sum, p.stderr.String())
		}
	}
	if winners != 1 || processed != 24 {
		t.Fatalf("%d processes exited 0, %d periods processed in all; want 1 and 24", winners, processed)
	}
	st := opsStatus(h, now)
	if st["checkpoint"] != "2024-03-01T06:00:00Z" || opsInt(t, st, "periods_behind") != 0 {
		t.Errorf("status after the race: %v", st)
	}
	ms := opsManifests(h)
	ends := map[time.Time]bool{}
	for _, end := range ms {
		ends[end] = true
	}
	if len(ms) != 24 || len(ends) != 24 {
		t.Errorf("%d manifests for %d periods, want 24", len(ms), len(ends))
	}
	// The winner's close: one statement of the 24 periods.
	if months := checkStatements(h); len(months) != 1 || len(opsOnlyMonth(months).manifest.Periods) != 24 {
		t.Errorf("statements after the race %v, want one month of 24 periods", months)
	}
}

// opsScheduleSIGTERM runs `reportjob schedule` ("@every 1s", one period a
// run) and sends it SIGTERM while its third run builds: it exits 0 within
// the grace time, and the checkpoint is the end of the last period
// delivered.
func opsScheduleSIGTERM(t *testing.T, bin string) {
	start := time.Now().UTC().Truncate(15 * time.Minute).Add(-24 * time.Hour)
	h := newHarness(t, harnessOptions{period: "15m", start: start.Format(time.RFC3339),
		extra: "  max_periods_per_run: 1", top: `schedule: {cron: "@every 1s"}`})
	opsPut(h, start, start.Add(2*time.Hour), 2)

	cmd := exec.Command(bin, "--config", h.config, "schedule", "--grace", "10s")
	cmd.Env = append(os.Environ(), h.env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var out, logs opsBuffer
	outDone := make(chan struct{})
	go func() {
		io.Copy(&out, stdout)
		close(outDone)
	}()
	building := make(chan struct{}, 100)
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if bytes.Contains(sc.Bytes(), []byte(`"msg":"building period"`)) {
				building <- struct{}{}
			}
		}
	}()
	for n := 0; n < 3; n++ {
		select {
		case <-building:
		case <-time.After(20 * time.Second):
			t.Fatalf("schedule started %d runs in 20 s\nstdout:\n%s\nstderr:\n%s", n, out.String(), logs.String())
		}
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-outDone:
	case <-time.After(15 * time.Second):
		t.Fatalf("schedule did not exit within the grace time after SIGTERM\nstderr:\n%s", logs.String())
	}
	<-logsDone
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("schedule exited %d (%v) after SIGTERM, want 0\nstderr:\n%s", code, err, logs.String())
	}
	t.Logf("schedule stopped %s after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	if !strings.Contains(logs.String(), `"msg":"schedule stopped"`) {
		t.Errorf("no \"schedule stopped\" log line:\n%s", logs.String())
	}

	sums := opsSummaries(t, out.String(), "run")
	processed := 0
	for i, s := range sums {
		if s["status"] != "ok" || opsInt(t, s, "periods_processed") != 1 {
			t.Errorf("scheduled run %d: %v", i, s)
		}
		processed += opsInt(t, s, "periods_processed")
	}
	if len(sums) < 3 {
		t.Fatalf("%d run summaries, want at least 3 (the third in progress at SIGTERM):\n%s", len(sums), out.String())
	}
	wantCP := start.Add(time.Duration(processed) * 15 * time.Minute).Format(time.RFC3339)
	st := opsStatus(h, time.Now().UTC().Format(time.RFC3339))
	if st["checkpoint"] != wantCP || sums[len(sums)-1]["checkpoint"] != wantCP {
		t.Errorf("checkpoint %v (last summary %v), want %s after %d periods", st["checkpoint"], sums[len(sums)-1]["checkpoint"], wantCP, processed)
	}
	if l, ok := st["lease"].(map[string]any); ok && l["held"] == true {
		t.Errorf("lease still held after schedule stopped: %v", l)
	}
	if ms := opsManifests(h); len(ms) != processed {
		t.Errorf("%d manifests, want %d", len(ms), processed)
	}
	opsStoppedStatements(h, processed)
}

//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/embedded"
)

// Overlap on the embedded store: its file lock serialises processes (a
// second one waits a second for the file, then exits 3), so overlap means
// "one at a time, the others refused", never two writers.
//
//	go test ./cmd/reportjob -run TestOverlapEmbedded -v
//	RJTEST_LONG=1 go test ./cmd/reportjob -run TestOverlapEmbedded -v   (a 30 s storm instead of 5 s)

func TestOverlapEmbedded(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	// Each on a store of its own, side by side (they mostly wait).
	var wg sync.WaitGroup
	for name, fn := range map[string]func(*testing.T, string){
		"FileLock": overlapFileLock, "StoppedHolder": overlapStoppedEmbedded, "Storm": overlapStormEmbedded,
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) { fn(t, bin) })
		}()
	}
	wg.Wait()
}

// overlapFileLock: while another process has the file, run, a backfill and
// verify --repair exit 3 saying so and write nothing, and a schedule's runs
// report lease_held; once the file is free the schedule's next run works.
func overlapFileLock(t *testing.T, bin string) {
	start := overlapStart()
	h := procHarness(t, "embedded", overlapOptions(start))
	putItems(h, overlapItems(start, 6))
	if out := procRun(t, bin, h, nil, "run", "--now", start.Add(time.Hour).Format(time.RFC3339)); out.code != exitOK {
		t.Fatalf("first run: %s", out)
	}
	before := h.objects()

	st, err := openStore(context.Background(), h.cli()) // holds the file
	if err != nil {
		t.Fatal(err)
	}
	sched := procCmd(bin, h, nil, "schedule", "--grace", "10s")
	var schedOut opsBuffer
	sched.Stdout, sched.Stderr = &schedOut, new(bytes.Buffer)
	schedStarted := time.Now()
	if err := sched.Start(); err != nil {
		st.close()
		t.Fatal(err)
	}
	defer sched.Process.Kill()
	now := time.Now().UTC().Format(time.RFC3339)
	refused := [][]string{
		{"run"},
		{"run", "--backfill", "--from", start.Format(time.RFC3339), "--to", start.Add(30 * time.Minute).Format(time.RFC3339), "--now", now},
		{"verify", "--repair", "--from", start.Format(time.RFC3339), "--to", start.Add(45 * time.Minute).Format(time.RFC3339), "--now", now},
	}
	outs := make([]procOut, len(refused))
	var wg sync.WaitGroup
	for i, args := range refused {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = procRun(t, bin, h, nil, args...)
		}()
	}
	wg.Wait()
	// The schedule is refused at least once meanwhile.
	waitUntil(t, 30*time.Second, "a scheduled run refused", func() bool {
		return strings.Contains(schedOut.String(), `"status":"lease_held"`)
	})
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	for i, out := range outs {
		sum := lastJSON(t, out.stdout)
		if out.code != exitLeaseHeld || sum["status"] != "lease_held" ||
			!strings.Contains(sum["error"].(string), "in use by another process") {
			t.Errorf("%v with the file held: %s", refused[i], out)
		}
	}
	if got := h.objects(); !mapsEqual(got, before) {
		t.Errorf("refused processes changed the sink: %d objects before, %d after", len(before), len(got))
	}
	// The schedule gets the file at its next tick.
	waitUntil(t, 20*time.Second, "the schedule to deliver a period once the file is free", func() bool {
		return len(opsManifests(h)) > 3
	})
	sched.Process.Signal(syscall.SIGTERM)
	out := procWait(sched, schedStarted)
	out.stdout = schedOut.String()
	if out.code != exitOK {
		t.Fatalf("schedule: %s", out)
	}
	var held, ok int
	for _, sum := range opsSummaries(t, out.stdout, "run") {
		switch sum["status"] {
		case "lease_held":
			held++
			if ok > 0 {
				t.Errorf("a scheduled run was refused after the file was free: %v", sum)
			}
		case "ok", "nothing_due":
			ok++
		default:
			t.Errorf("a scheduled run: %v", sum)
		}
	}
	if held < 1 || ok < 1 {
		t.Errorf("schedule: %d runs refused while the file was held, %d ran after; want at least 1 and 1\n%s", held, ok, out.stdout)
	}
	t.Logf("file held: run, backfill and verify --repair exited 3; the schedule was refused %d times, then ran %d times", held, ok)
}

// overlapStoppedEmbedded: a run stopped (SIGSTOP) while it builds a period
// keeps the file, so every other process exits 3 meanwhile; resumed (SIGCONT)
// after its lease's TTL, it finds its lease expired and stops without a
// write (exit 1); then the job completes as a single run would.
func overlapStoppedEmbedded(t *testing.T, bin string) {
	start := overlapStart()
	h := procHarness(t, "embedded", overlapOptions(start))
	ref := procHarness(t, "embedded", harnessOptions{period: "15m", start: start.Format(time.RFC3339),
		extra: "  lease_ttl: 5s\n  recheck_after: []"})
	items := overlapItems(start, 6)
	putItems(h, items)
	putItems(ref, items)
	cp0 := procState(h).Checkpoint

	zombie, zlog, zout := overlapCmd(t, bin, h, "run")
	defer zombie.Process.Kill()
	var zerr bytes.Buffer
	for zlog.Scan() {
		zerr.Write(append(zlog.Bytes(), '\n'))
		if strings.Contains(zlog.Text(), `"msg":"building period"`) {
			break
		}
	}
	if err := procStop(zombie.Process.Pid); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for zlog.Scan() {
			zerr.Write(append(zlog.Bytes(), '\n'))
		}
	}()

	// Everyone else is refused while the holder is stopped.
	now := time.Now().UTC().Format(time.RFC3339)
	var stderrs []string
	for _, args := range [][]string{
		{"run"},
		{"run", "--backfill", "--from", start.Format(time.RFC3339), "--to", start.Add(30 * time.Minute).Format(time.RFC3339), "--now", now},
		{"verify", "--repair", "--from", start.Format(time.RFC3339), "--to", start.Add(30 * time.Minute).Format(time.RFC3339), "--now", now},
	} {
		out := procRun(t, bin, h, nil, args...)
		if out.code != exitLeaseHeld {
			t.Errorf("%v beside a stopped holder: %s", args, out)
		}
		stderrs = append(stderrs, out.stderr)
	}
	time.Sleep(time.Until(stopped.Add(6 * time.Second))) // past its 5 s lease
	before := h.objects()
	if err := zombie.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	<-drained
	zombie.Wait()
	code := zombie.ProcessState.ExitCode()
	sum := lastJSON(t, zout.String())
	// The file lock kept every other process out: its lease expired, no
	// one took it (issue 31: the error says so).
	if code != exitFailed || !strings.Contains(sum["error"].(string), "expired while the run was stalled; no other run has taken it") {
		t.Fatalf("the resumed holder: exit %d, %v; want 1 and a lost lease\n%s", code, sum, procTail(zerr.String(), 20))
	}
	if after := h.objects(); !mapsEqual(after, before) {
		t.Errorf("the resumed holder wrote to the sink after its lease expired: %d objects -> %d", len(before), len(after))
	}
	if cp := procState(h).Checkpoint; !cp.Equal(cp0) {
		t.Errorf("the resumed holder moved the checkpoint to %s", cp)
	}
	t.Logf("holder stopped %s; resumed: exit 1 (%s), no write", time.Since(stopped).Round(time.Millisecond), sum["error"])
	overlapFinish(t, bin, h, ref, start, time.Now().UTC().Format(time.RFC3339), append(stderrs, zerr.String()))
}

// overlapStormEmbedded: a schedule, two loops of runs, a loop of backfills
// and one of verify --repair on one file: every process exits 0 or 3, each
// period is committed once, the checkpoint never moves back, and the
// outcome is a single run's.
func overlapStormEmbedded(t *testing.T, bin string) {
	start := overlapStart()
	h := procHarness(t, "embedded", overlapOptions(start))
	ref := procHarness(t, "embedded", harnessOptions{period: "15m", start: start.Format(time.RFC3339),
		extra: "  lease_ttl: 5s\n  recheck_after: []"})
	items := overlapItems(start, 6)
	putItems(h, items)
	putItems(ref, items)
	first := procRun(t, bin, h, nil, "run", "--now", start.Add(time.Hour).Format(time.RFC3339))
	if first.code != exitOK {
		t.Fatalf("first run: %s", first)
	}
	path := h.cli().cfg.Store.Embedded.Path
	smp := newSampler(100*time.Millisecond, func() (time.Time, int64, bool) {
		s, err := embedded.Open(path, embedded.Options{LockTimeout: 20 * time.Millisecond})
		if errors.Is(err, embedded.ErrLocked) {
			return time.Time{}, 0, false
		}
		if err != nil {
			t.Error(err)
			return time.Time{}, 0, false
		}
		defer s.Close()
		st, err := s.Load(context.Background(), "e2e")
		if err != nil {
			t.Error(err)
			return time.Time{}, 0, false
		}
		return st.Checkpoint, st.Lease.Token, true
	})
	d := 5 * time.Second
	if procLong() {
		d = 30 * time.Second
	}
	now := time.Now().UTC().Format(time.RFC3339)
	s := newStorm(t, bin, h)
	s.schedule()
	s.loop("run", 100*time.Millisecond, "run")
	s.loop("run", 150*time.Millisecond, "run")
	s.loop("backfill", 300*time.Millisecond, "run", "--backfill", "--from", start.Format(time.RFC3339),
		"--to", start.Add(45*time.Minute).Format(time.RFC3339), "--now", now)
	s.loop("verify --repair", 300*time.Millisecond, "verify", "--repair", "--from", start.Format(time.RFC3339),
		"--to", start.Add(45*time.Minute).Format(time.RFC3339), "--now", now)
	time.Sleep(d)
	s.end()
	samples := smp.end(t)
	s.checkExits()
	t.Logf("storm of %s: %s; %s", d, s.counts(), samples)
	overlapFinish(t, bin, h, ref, start, time.Now().UTC().Format(time.RFC3339), append(s.stderrs(), first.stderr))
}

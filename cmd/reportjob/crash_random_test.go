//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Random SIGKILLs: the crash scenario's run is killed after a random delay
// (sometimes its first rerun too), then rerun until it exits 0; the
// outcome must equal the uncrashed reference's. Trials are seeded (the
// seed is printed; RJTEST_SEED replays it).
//
//	go test ./cmd/reportjob -run TestCrashRandomKill -v                  short: 8 + 3 trials
//	RJTEST_LONG=1 go test ./cmd/reportjob -run TestCrashRandomKill -v    long: 160 + 40 trials

// randomTrials are the trials per stack, short and long.
func randomTrials(backend string) int {
	long := map[string]int{"embedded": 160, "aws": 40}
	short := map[string]int{"embedded": 8, "aws": 3}
	if procLong() {
		return long[backend]
	}
	return short[backend]
}

// randomStats counts what the trials did.
type randomStats struct {
	mu                sync.Mutex
	trials            int
	kills, landed     int // SIGKILLs sent, and those that ended a running process
	missed            int // the process had exited before its SIGKILL (the trial then starts over)
	reruns, maxReruns int // runs after the last kill until one exited 0
	lastStep          map[string]int
}

func (s *randomStats) String() string {
	steps := make([]string, 0, len(s.lastStep))
	for k, n := range s.lastStep {
		steps = append(steps, fmt.Sprintf("%q=%d", k, n))
	}
	sort.Strings(steps)
	return fmt.Sprintf("%d trials, %d SIGKILLs (%d landed mid-run, %d after the run had exited), reruns needed %d in all (at most %d in a trial); last log line before each kill: %s",
		s.trials, s.kills, s.landed, s.missed, s.reruns, s.maxReruns, strings.Join(steps, " "))
}

func TestCrashRandomKill(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	seed := crashSeed(t)
	t.Logf("seed %d (replay with RJTEST_SEED=%d), long mode %v", seed, seed, procLong())
	s := newCrashScenario()
	defer s.cleanup()
	all := map[string]*randomStats{}
	var wg sync.WaitGroup
	for _, backend := range []string{"embedded", "aws"} {
		st := &randomStats{lastStep: map[string]int{}}
		all[backend] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(backend, func(t *testing.T) { randomKills(t, bin, s, backend, seed, st) })
		}()
	}
	wg.Wait()
	var trials, landed, reruns int
	for _, backend := range []string{"embedded", "aws"} {
		st := all[backend]
		t.Logf("random kills on %s: %s", backend, st)
		fmt.Printf("random kills on %s (seed %d): %s\n", backend, seed, st)
		trials, landed, reruns = trials+st.trials, landed+st.landed, reruns+st.reruns
	}
	line := fmt.Sprintf("random kills: %d trials in all, %d SIGKILLs landed mid-run, %d reruns needed (seed %d, long mode %v)",
		trials, landed, reruns, seed, procLong())
	t.Log(line)
	fmt.Println(line)
}

func randomKills(t *testing.T, bin string, s *crashScenario, backend string, seed uint64, st *randomStats) {
	ref := s.reference(t, bin, backend)
	// Kill within 0.9 times an uncrashed run's duration, measured here (on
	// a loaded machine a run may still end before its SIGKILL: counted).
	h := s.setup(t, bin, backend)
	timed := procRun(t, bin, h, nil, "run", "--now", csNow)
	if timed.code != exitOK {
		t.Fatalf("timing run: %s", timed)
	}
	maxDelay := max(timed.took*9/10, 100*time.Millisecond)
	t.Logf("an uncrashed run takes %s: kills within %s", timed.took.Round(time.Millisecond), maxDelay.Round(time.Millisecond))
	sem := make(chan struct{}, crashConcurrency[backend])
	var wg sync.WaitGroup
	for i := range randomTrials(backend) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(fmt.Sprintf("trial-%03d", i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(i)<<8|map[string]uint64{"embedded": 1, "aws": 2}[backend]))
				randomTrial(t, bin, s, backend, ref, rng, maxDelay, st)
			})
		}()
	}
	wg.Wait()
}

// randomTrial kills the run (and, one time in two, the next one) after a
// random delay, then reruns until exit 0. When the run beats its first
// SIGKILL (it ended first: counted as missed), the trial starts over on a
// fresh store with the delay's bound halved, up to 4 times: every trial
// recovers from at least one kill that landed.
func randomTrial(t *testing.T, bin string, s *crashScenario, backend string, ref crashReference, rng *rand.Rand,
	maxDelay time.Duration, st *randomStats) {
	var h *harness
	kills := 1 + rng.IntN(2)
	var outs []procOut
	var landed, missed, reruns int
	var steps []string
	done := false
	for k := 0; k < kills && !done; k++ {
		if k == 0 {
			h = s.setup(t, bin, backend)
		}
		delay := time.Duration(rng.Int64N(int64(maxDelay)))
		out := procKillAfter(t, bin, h, delay, "run", "--now", csNow)
		outs = append(outs, out)
		switch {
		case out.killed:
			landed++
			steps = append(steps, lastLogMsg(out.stderr))
			procWaitLease(h)
		case out.code == exitOK && landed == 0 && missed < 3:
			// The run beat its first SIGKILL: again, sooner.
			missed++
			maxDelay = max(maxDelay/2, 10*time.Millisecond)
			k = -1
		case out.code == exitOK:
			// Done before its SIGKILL: after a kill that landed, it was
			// the one rerun.
			missed++
			done = true
			if landed > 0 {
				reruns = 1
			}
		default:
			t.Fatalf("run %d (to be killed after %s): %s", k, delay, out)
		}
	}
	for !done {
		out := procRun(t, bin, h, nil, "run", "--now", csNow)
		outs = append(outs, out)
		reruns++
		if out.code == exitOK {
			break
		}
		if reruns == 3 {
			t.Fatalf("3 reruns after %d kills, none exited 0; last: %s", landed, out)
		}
		procWaitLease(h)
	}
	if landed > 0 && reruns != 1 {
		t.Errorf("%d reruns were needed after the last kill, want ONE", reruns)
	}
	logs := map[string]procOut{}
	for i, o := range outs {
		logs[fmt.Sprintf("run-%d", i)] = o
	}
	procKeepLogs(t, logs)
	s.check(h, ref)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.trials++
	st.kills += landed + missed
	st.landed += landed
	st.missed += missed
	st.reruns += reruns
	st.maxReruns = max(st.maxReruns, reruns)
	for _, s := range steps {
		st.lastStep[s]++
	}
}

// procKillAfter runs the binary and sends it SIGKILL after delay, unless
// it has exited by then.
func procKillAfter(t testing.TB, bin string, h *harness, delay time.Duration, args ...string) procOut {
	t.Helper()
	cmd := procCmd(bin, h, nil, args...)
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
	out := procWait(cmd, started)
	timer.Stop()
	return out
}

// lastLogMsg returns the msg (and period) of the last JSON log line of
// stderr: where the run was when it was killed.
func lastLogMsg(stderr string) string {
	msg := "(no log line yet)"
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg    string `json:"msg"`
			Period string `json:"period"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			msg = l.Msg
			if l.Period != "" {
				msg += " " + strings.TrimPrefix(l.Period, "20240301T")
			}
		}
	}
	return msg
}

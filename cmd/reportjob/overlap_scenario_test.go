//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
)

// The overlap scenario: `run`s, backfills, `verify --repair` and a
// `schedule` started against one job at once, on the wall clock (schedule
// has no --now): 15-minute periods from six hours ago, items in the first
// five hours, leases of 5 s, at most 3 periods a run (so that the job is
// done by many runs, which interleave), no rechecks (a recheck's state
// records the report clock of its read, which differs between runs on the
// wall clock and the reference). After the storm, one run on a fixed
// --now catches up, and everything is compared with a single run of a
// fresh store at that --now.

const overlapExtra = "  lease_ttl: 5s\n  max_periods_per_run: 3\n  recheck_after: []"

// overlapStart is the first period: six hours before the current quarter.
func overlapStart() time.Time {
	return time.Now().UTC().Truncate(15 * time.Minute).Add(-6 * time.Hour)
}

// overlapOptions is the harness of the scenario.
func overlapOptions(start time.Time) harnessOptions {
	return harnessOptions{period: "15m", start: start.Format(time.RFC3339), extra: overlapExtra,
		top: `schedule: {cron: "@every 1s"}`}
}

// overlapItems are n transactions (at most 450) in each period of the
// first five hours.
func overlapItems(start time.Time, n int) []item.Item {
	var out []item.Item
	for p := 0; p < 20; p++ {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("ov-%02d-%03d", p, i)
			at := start.Add(time.Duration(p)*15*time.Minute + time.Duration(i)*2*time.Second + 3*time.Second)
			pk, sk := keys.ForTransaction(id, at, 1)
			out = append(out, item.Item{PK: pk, SK: sk, Attrs: map[string]item.Value{
				item.AttrTransactionID: item.S(id), item.AttrAgencyID: item.S([]string{"acme", "beta", "gamma"}[i%3]),
				item.AttrAmount: item.N(fmt.Sprintf("%d.25", 10+i)), item.AttrCurrency: item.S("USD"),
			}})
		}
	}
	return out
}

// putItems writes items straight into h's store.
func putItems(h *harness, items []item.Item) {
	h.t.Helper()
	h.withStore(func(st *store) {
		if err := st.PutItems(context.Background(), items); err != nil {
			h.t.Fatal(err)
		}
	})
}

// stormProc is one process the storm ran.
type stormProc struct {
	kind string
	out  procOut
}

// storm runs processes against one job and keeps their outcomes.
type storm struct {
	t    *testing.T
	bin  string
	h    *harness
	stop chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	procs []stormProc
}

func newStorm(t *testing.T, bin string, h *harness) *storm {
	return &storm{t: t, bin: bin, h: h, stop: make(chan struct{})}
}

func (s *storm) record(kind string, out procOut) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, stormProc{kind: kind, out: out})
}

// loop starts processes of one kind, one after the other, until end.
func (s *storm) loop(kind string, pause time.Duration, args ...string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			s.record(kind, procRun(s.t, s.bin, s.h, nil, args...))
			select {
			case <-s.stop:
				return
			case <-time.After(pause):
			}
		}
	}()
}

// schedule starts `reportjob schedule`; end stops it with SIGTERM.
func (s *storm) schedule() {
	cmd := procCmd(s.bin, s.h, nil, "schedule", "--grace", "10s")
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-s.stop
		cmd.Process.Signal(syscall.SIGTERM)
		s.record("schedule", procWait(cmd, started))
	}()
}

// end stops the loops and the schedule and waits for them.
func (s *storm) end() {
	close(s.stop)
	s.wg.Wait()
}

// counts returns "kind: N (exit c: n, ...)" for each kind.
func (s *storm) counts() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKind := map[string]map[int]int{}
	for _, p := range s.procs {
		if byKind[p.kind] == nil {
			byKind[p.kind] = map[int]int{}
		}
		byKind[p.kind][p.out.code]++
	}
	var parts []string
	for kind, codes := range byKind {
		n := 0
		var cs []string
		for c, k := range codes {
			n += k
			cs = append(cs, fmt.Sprintf("exit %d: %d", c, k))
		}
		sort.Strings(cs)
		parts = append(parts, fmt.Sprintf("%s %d (%s)", kind, n, strings.Join(cs, ", ")))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// checkExits checks that every process of the storm ended as allowed:
// done (0) or refused because another holds the job (3).
func (s *storm) checkExits() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.out.code != exitOK && p.out.code != exitLeaseHeld {
			s.t.Errorf("%s: %s", p.kind, p.out)
		}
		if p.kind == "schedule" {
			for _, sum := range opsSummaries(s.t, p.out.stdout, "run") {
				if st := sum["status"]; st != "ok" && st != "nothing_due" && st != "lease_held" {
					s.t.Errorf("a scheduled run: %v", sum)
				}
			}
		}
	}
}

// stderrs returns every process's stderr.
func (s *storm) stderrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p.out.stderr)
	}
	return out
}

// commitsByPeriod counts the "checkpoint moved" log lines of the given
// stderrs by checkpoint (a period's end): each period is committed once.
func commitsByPeriod(stderrs ...string) map[string]int {
	out := map[string]int{}
	for _, e := range stderrs {
		sc := bufio.NewScanner(strings.NewReader(e))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var l struct {
				Msg        string `json:"msg"`
				Checkpoint string `json:"checkpoint"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "checkpoint moved" {
				out[l.Checkpoint]++
			}
		}
	}
	return out
}

// checkCommits checks that every period end in (start, cp] was committed
// exactly once, and nothing else was.
func checkCommits(t testing.TB, commits map[string]int, start, cp time.Time) int {
	t.Helper()
	n := 0
	for end := start.Add(15 * time.Minute); !end.After(cp); end = end.Add(15 * time.Minute) {
		k := end.Format(time.RFC3339)
		if commits[k] != 1 {
			t.Errorf("period ending %s committed %d times, want once", k, commits[k])
		}
		n++
	}
	if len(commits) != n {
		t.Errorf("%d checkpoints committed, want %d (%s..%s): %v", len(commits), n, start.Add(15*time.Minute), cp, commits)
	}
	return n
}

// sampler reads the job's state every interval and checks that the
// checkpoint and the lease token never move back.
type sampler struct {
	mu               sync.Mutex
	samples, skipped int
	checkpoints      int // distinct checkpoints seen
	lastCP           time.Time
	lastToken        int64
	tokens           int // distinct lease tokens seen
	backwards        []string
	stop, done       chan struct{}
	load             func() (cp time.Time, token int64, ok bool)
}

func newSampler(interval time.Duration, load func() (time.Time, int64, bool)) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), load: load}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	cp, token, ok := s.load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		s.skipped++
		return
	}
	s.samples++
	if cp.Before(s.lastCP) {
		s.backwards = append(s.backwards, fmt.Sprintf("checkpoint %s after %s", cp, s.lastCP))
	}
	if !cp.Equal(s.lastCP) {
		s.checkpoints++
	}
	if token < s.lastToken {
		s.backwards = append(s.backwards, fmt.Sprintf("lease token %d after %d", token, s.lastToken))
	}
	if token != s.lastToken {
		s.tokens++
	}
	s.lastCP, s.lastToken = cp, max(token, s.lastToken)
}

// checkpoint returns the last sampled checkpoint.
func (s *sampler) checkpoint() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastCP
}

// end stops sampling and checks that nothing moved back.
func (s *sampler) end(t testing.TB) string {
	t.Helper()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.backwards {
		t.Errorf("moved back: %s", b)
	}
	return fmt.Sprintf("%d state samples (%d skipped: store busy), %d checkpoints and %d lease tokens seen, none moved back",
		s.samples, s.skipped, s.checkpoints, s.tokens)
}

// waitUntil polls cond every 50 ms until it holds or timeout passes.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// overlapFinish catches the job up with runs at now, then checks it
// against a single run of a fresh store at now (ref), and that every
// period was committed exactly once (stderrs of every process that ran).
func overlapFinish(t *testing.T, bin string, h, ref *harness, start time.Time, now string, stderrs []string) {
	t.Helper()
	for i := 0; ; i++ {
		out := procRun(t, bin, h, []string{"REPORTJOB_REPORT_MAX_PERIODS_PER_RUN=96"}, "run", "--now", now)
		if out.code != exitOK {
			t.Fatalf("catch-up run: %s", out)
		}
		stderrs = append(stderrs, out.stderr)
		if lastJSON(t, out.stdout)["status"] == "nothing_due" {
			break
		}
		if i == 20 {
			t.Fatal("20 catch-up runs and still periods due")
		}
	}
	out := procRun(t, bin, ref, nil, "run", "--now", now)
	if out.code != exitOK {
		t.Fatalf("reference run: %s", out)
	}
	refSum := lastJSON(t, out.stdout)
	want, got := snapshot(ref), snapshot(h)
	checkSinkInvariant(t, want)
	checkSinkInvariant(t, got)
	compareSinks(t, want, got)
	for key, m := range got.manifests {
		if m.Revision != 1 {
			t.Errorf("%s: revision %d, want 1 (the items never changed)", key, m.Revision)
		}
	}
	cp := procState(h).Checkpoint
	if refCP := procState(ref).Checkpoint; !cp.Equal(refCP) || refSum["checkpoint"] != refCP.Format(time.RFC3339) {
		t.Errorf("checkpoint %s, reference %s", cp, refCP)
	}
	n := checkCommits(t, commitsByPeriod(stderrs...), start, cp)
	t.Logf("%d periods committed once each, %d manifests equal to a single run's", n, len(want.manifests))
}

// overlapCmd starts a process with its stderr readable line by line.
func overlapCmd(t *testing.T, bin string, h *harness, args ...string) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	cmd := procCmd(bin, h, nil, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return cmd, sc, &stdout
}

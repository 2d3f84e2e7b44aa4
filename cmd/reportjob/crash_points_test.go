//go:build linux

package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// Crash at every step: the real binary kills itself (SIGKILL) at a step
// boundary of the crash scenario's run (RJTEST_CRASH_AT, package
// crashpoint); ONE rerun must exit 0 and leave exactly what an uncrashed
// run of the same scenario leaves.
//
//	go test ./cmd/reportjob -run 'TestCrashPoints' -v

// crashCases are the crash points, each at its first hit and, where the
// scenario reaches it more than once, at a later one: the fifth hit of the
// per-period points is the restatement of 02:00 (see crashScenario);
// after-upload:5 is the fifth object of 03:00; after-checkpoint:2 is the
// commit of 04:00 and :5 the record of the recheck. The month points:
// the close at the start of the run has nothing to publish (the first
// run's close published March's revision 1), so month-after-*:1 are the
// close at its end, which publishes revision 2 (month-after-upload:4 is
// its last object: the statements file and one per agency), and
// before-due-delete:1 is the start's, :2 the end's; a crash in the close
// leaves the due markers of the run's periods for the rerun's close.
var crashCases = []string{
	"after-read:1", "after-read:5",
	"after-claims:1", "after-claims:5",
	"after-upload:1", "after-upload:5",
	"mid-restatement:1", "mid-restatement:2", "mid-restatement:5",
	"after-manifest:1", "after-manifest:5",
	"after-cleanup:1", "after-cleanup:5",
	"after-checkpoint:1", "after-checkpoint:2", "after-checkpoint:5",
	"month-after-upload:1", "month-after-upload:4",
	"month-after-manifest:1", "month-after-cleanup:1", "before-due-delete:1", "before-due-delete:2",
}

// crashConcurrency bounds the cases in flight per stack: the AWS cases
// spend most of their time waiting for the dead holder's lease to expire,
// so they all wait at once.
var crashConcurrency = map[string]int{"embedded": 2, "aws": 16}

// onBothStacks runs a crash suite on the embedded stack and on DynamoDB +
// S3 side by side, each stack's cases concurrently (t.Run from goroutines,
// bounded by crashConcurrency rather than by -parallel). For each stack,
// prepare (run as the stack's subtest: its reference outcome, say) returns
// the stack's case names and the function that runs one case.
func onBothStacks(t *testing.T, prepare func(t *testing.T, backend string) (cases []string, run func(t *testing.T, c string))) {
	var stacks sync.WaitGroup
	for _, backend := range []string{"embedded", "aws"} {
		stacks.Add(1)
		go func() {
			defer stacks.Done()
			t.Run(backend, func(t *testing.T) {
				cases, run := prepare(t, backend)
				sem := make(chan struct{}, crashConcurrency[backend])
				var wg sync.WaitGroup
				for _, c := range cases {
					wg.Add(1)
					go func() {
						defer wg.Done()
						sem <- struct{}{}
						defer func() { <-sem }()
						t.Run(c, func(t *testing.T) { run(t, c) })
					}()
				}
				wg.Wait()
			})
		}()
	}
	stacks.Wait()
}

// crashLine logs a suite's closing line for one stack, and prints it.
func crashLine(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	fmt.Println(line)
}

// crashSeed is a random-kill suite's seed: RJTEST_SEED when set (a
// replay), else the clock.
func crashSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("RJTEST_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("RJTEST_SEED=%q: %v", v, err)
		}
		seed = n
	}
	return seed
}

// crashCasesFor returns the cases of a stack: every one on the embedded
// stack; on DynamoDB + S3, whose cases cost a table, a bucket and a lease
// expiry each, the first hit of every point and the later hits the issue
// names (after-upload:5, after-checkpoint:2) and the close at the run's
// end (before-due-delete:2) by default, every case in the
// long mode (RJTEST_LONG=1).
func crashCasesFor(backend string) []string {
	if backend == "embedded" || procLong() {
		return crashCases
	}
	var out []string
	for _, c := range crashCases {
		if strings.HasSuffix(c, ":1") || c == "after-upload:5" || c == "after-checkpoint:2" || c == "before-due-delete:2" {
			out = append(out, c)
		}
	}
	return out
}

func TestCrashPoints(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	// Every point the package declares is exercised.
	// (the monthly close's points have cases here, in the close after a run
	// that delivers and restates, and in stCrashCases, on the statements
	// scenario across a month end: TestStatementsCrashPoints).
	for _, p := range crashpoint.Points {
		found := false
		for _, c := range append(slices.Clone(crashCases), stCrashCases...) {
			found = found || strings.HasPrefix(c, string(p)+":")
		}
		if !found {
			t.Errorf("crash point %s has no case", p)
		}
	}
	s := newCrashScenario()
	defer s.cleanup()
	onBothStacks(t, func(t *testing.T, backend string) ([]string, func(*testing.T, string)) {
		started := time.Now()
		ref := s.reference(t, bin, backend)
		cases := crashCasesFor(backend)
		var recovered atomic.Int64
		t.Cleanup(func() {
			crashLine(t, "crash points on %s: %d cases, %d recovered by ONE rerun to the reference's outcome, in %s",
				backend, len(cases), recovered.Load(), time.Since(started).Round(time.Millisecond))
		})
		return cases, func(t *testing.T, c string) {
			crashAt(t, bin, s, backend, c, ref)
			if !t.Failed() {
				recovered.Add(1)
			}
		}
	})
}

// crashAt crashes the scenario's run at point (name:N), reruns it once,
// and compares the outcome with the reference.
func crashAt(t *testing.T, bin string, s *crashScenario, backend, point string, ref crashReference) {
	h := s.setup(t, bin, backend)
	crash := procRun(t, bin, h, []string{crashpoint.EnvVar + "=" + point}, "run", "--now", csNow)
	if !crash.killed || !strings.Contains(crash.stderr, "crashpoint "+point+" reached") {
		t.Fatalf("the run did not crash at %s: %s", point, crash)
	}
	waited := procWaitLease(h)
	rerun := procRun(t, bin, h, nil, "run", "--now", csNow)
	procKeepLogs(t, map[string]procOut{"crash": crash, "rerun": rerun})
	if rerun.code != exitOK {
		t.Fatalf("the one rerun after a crash at %s: %s", point, rerun)
	}
	sum := lastJSON(t, rerun.stdout)
	if st := sum["status"]; st != "ok" && st != "nothing_due" {
		t.Fatalf("rerun summary: %v", sum)
	}
	// The fifth manifest and cleanup are the restatement's: the rerun must
	// record the restatement the crashed run published (job.restated).
	s.check(h, ref)
	line := fmt.Sprintf("%s %s: crashed after %s, waited %s for the lease, rerun exit 0 in %s (%v periods, %v rechecks)",
		backend, point, crash.took.Round(time.Millisecond), waited.Round(time.Millisecond), rerun.took.Round(time.Millisecond),
		sum["periods_processed"], sum["rechecks"])
	t.Log(line)
}

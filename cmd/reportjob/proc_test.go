//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/testenv"
)

// Helpers for the tests that run the real reportjob binary as a
// subprocess: the crash suites (crash_*_test.go) and the overlap suites
// (overlap_*_test.go). Linux only, like ops_process_test.go: they send
// SIGKILL, SIGSTOP and SIGCONT.

// procLong reports whether the long modes run (RJTEST_LONG=1): more
// random-kill trials and longer overlap storms. The default (short) modes
// run in the test command.
func procLong() bool { return os.Getenv("RJTEST_LONG") == "1" }

// procBuild is the binary built once per test binary.
var procBuild struct {
	once sync.Once
	path string
	err  error
	lock *os.File // held for the life of the test binary
}

// procBinaryPrefix names the folders the binary is built into. Each holds
// a .lock file that its test binary keeps locked; a folder whose lock is
// free belongs to a test binary that has exited, and the next build
// removes it (no TestMain is needed to clean up).
const procBinaryPrefix = "reportjob-testbin-"

// procBinary builds cmd/reportjob once (go build -o into a temp folder)
// and returns its path.
func procBinary(t testing.TB) string {
	t.Helper()
	procBuild.once.Do(func() {
		procSweepBinaries()
		dir, err := os.MkdirTemp("", procBinaryPrefix)
		if err != nil {
			procBuild.err = err
			return
		}
		f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		}
		if err != nil {
			procBuild.err = fmt.Errorf("lock %s: %w", dir, err)
			return
		}
		procBuild.lock = f
		path := filepath.Join(dir, "reportjob")
		started := time.Now()
		out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput()
		if err != nil {
			procBuild.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		procBuild.path = path
		fmt.Fprintf(os.Stderr, "proc: built %s in %s\n", path, time.Since(started).Round(time.Millisecond))
	})
	if procBuild.err != nil {
		t.Fatal(procBuild.err)
	}
	return procBuild.path
}

// procSweepBinaries removes the binaries of test binaries that exited.
func procSweepBinaries() {
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), procBinaryPrefix) {
			continue
		}
		dir := filepath.Join(os.TempDir(), e.Name())
		f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// procAWSEnv puts the AWS SDK's environment (credentials, CA bundle,
// region of the test servers) into the test process when the servers are
// there, once, with os.Setenv and for good: the process-level suites run
// as parallel top-level tests (they mostly wait: for a lease to expire, a
// stopped process, a storm), and a parallel test may not call t.Setenv.
// The values are the ones every other test of the package sets with
// t.Setenv (harness_test.go), which restores them when it ends; parallel
// tests start only once every sequential one has ended. Subprocesses
// inherit them. Subtests on the AWS stack call procHarness, which skips
// them (fails them under CI) when the servers are missing.
func procAWSEnv() {
	procAWSOnce.Do(func() {
		for _, v := range []string{testenv.EnvDynamoDB, testenv.EnvS3TLS, testenv.EnvS3CA, testenv.EnvS3AccessKey, testenv.EnvS3SecretKey} {
			if os.Getenv(v) == "" {
				return
			}
		}
		os.Setenv("AWS_ACCESS_KEY_ID", os.Getenv(testenv.EnvS3AccessKey))
		os.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv(testenv.EnvS3SecretKey))
		os.Setenv("AWS_CA_BUNDLE", os.Getenv(testenv.EnvS3CA))
		os.Setenv("AWS_REGION", "us-east-1")
	})
}

var procAWSOnce sync.Once

// procHarness is newHarness without t.Setenv (see procAWSEnv), for
// parallel tests. backend is "embedded" or "aws". s3Endpoint and
// ddbEndpoint, when set, replace the servers' (a proxy in front of them).
func procHarness(t *testing.T, backend string, o harnessOptions) *harness {
	t.Helper()
	if backend == "aws" {
		testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
		testenv.RequireS3TLS(t)
		procAWSEnv()
	}
	o.backend = backend
	return writeHarness(t, t.TempDir(), o, "", "")
}

// writeHarness writes the config of a harness in dir (newHarness's, with
// the job's lease TTL and endpoints as given).
func writeHarness(t *testing.T, dir string, o harnessOptions, s3Endpoint, ddbEndpoint string) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, config: filepath.Join(dir, "config.yaml"), backend: o.backend}
	if o.shards == 0 {
		o.shards = 1
	}
	if o.period == "" {
		o.period = "1h"
	}
	if o.start == "" {
		o.start = "2024-03-01"
	}
	var storeYAML, sinkYAML string
	switch h.backend {
	case "embedded":
		storeYAML = fmt.Sprintf("  backend: embedded\n  embedded: {path: %q}\n", filepath.Join(dir, "data", "reportjob.db"))
		sinkYAML = fmt.Sprintf("  url: %q\n", "file://"+filepath.Join(dir, "reports"))
	case "aws":
		if ddbEndpoint == "" {
			ddbEndpoint = os.Getenv(testenv.EnvDynamoDB)
		}
		if s3Endpoint == "" {
			s3Endpoint = os.Getenv(testenv.EnvS3TLS)
		}
		n := harnessSeq.Add(1)
		suffix := fmt.Sprintf("%d-%d", time.Now().UnixNano()%1_000_000_000, n)
		h.bucket = "rj-proc-" + suffix
		storeYAML = fmt.Sprintf("  backend: dynamodb\n  dynamodb: {table: tx-%s, state_table: state-%s, region: us-east-1, endpoint: %q}\n",
			suffix, suffix, ddbEndpoint)
		sinkYAML = fmt.Sprintf("  url: %q\n  s3: {region: us-east-1, endpoint: %q, path_style: true, sse: AES256}\n",
			"s3://"+h.bucket+"/billing/reports", s3Endpoint)
	default:
		t.Fatalf("unknown backend %q", o.backend)
	}
	cfg := fmt.Sprintf("job_name: e2e\nstore:\n%skeys: {shards: %d}\nsink:\n%sreport:\n  period: %s\n  lateness: 2m\n  start: %q\n  concurrency: 4\n%s\nlog: {level: info, format: json}\n%s\n",
		storeYAML, o.shards, sinkYAML, o.period, o.start, o.extra, o.top)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// procOut is how a reportjob process ended.
type procOut struct {
	pid            int
	code           int  // exit code; -1 when a signal ended it
	killed         bool // SIGKILL ended it
	stdout, stderr string
	took           time.Duration
}

func (p procOut) String() string {
	return fmt.Sprintf("exit %d (killed %v) after %s\nstdout:\n%s\nstderr (tail):\n%s", p.code, p.killed,
		p.took.Round(time.Millisecond), p.stdout, procTail(p.stderr, 30))
}

// procTail returns the last n lines of s.
func procTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procCmd returns the command running the binary on h's config with env
// added to the test process's (RJTEST_CRASH_AT removed unless env sets it).
func procCmd(bin string, h *harness, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"--config", h.config}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, crashpoint.EnvVar+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, h.env...), env...)
	return cmd
}

// procWait waits for a started command with buffers for output.
func procWait(cmd *exec.Cmd, started time.Time) procOut {
	err := cmd.Wait()
	out := procOut{pid: cmd.Process.Pid, took: time.Since(started), code: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		out.killed = true
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		out.stderr = "wait: " + err.Error() + "\n"
	}
	if b, ok := cmd.Stdout.(*bytes.Buffer); ok {
		out.stdout = b.String()
	}
	if b, ok := cmd.Stderr.(fmt.Stringer); ok { // a *bytes.Buffer or a watchedBuffer
		out.stderr += b.String()
	}
	return out
}

// procRun runs the binary to its end.
func procRun(t testing.TB, bin string, h *harness, env []string, args ...string) procOut {
	t.Helper()
	cmd := procCmd(bin, h, env, args...)
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return procWait(cmd, started)
}

// procState loads the job's state from h's store.
func procState(h *harness) checkpoint.State {
	h.t.Helper()
	var st checkpoint.State
	h.withStore(func(s *store) {
		var err error
		if st, err = s.Load(context.Background(), "e2e"); err != nil {
			h.t.Fatal(err)
		}
	})
	return st
}

// procWaitLease waits until the lease recorded in h's store has expired
// (a dead holder's lease on DynamoDB, which only time frees) and returns
// how long it waited. A request the holder sent just before it died (an
// acquire, a renewal) may land after a read: the lease must be seen free,
// and the same, twice a second apart. The embedded store needs no wait:
// its file lock proves the holder dead, and the next run takes the lease
// over at once.
func procWaitLease(h *harness) time.Duration {
	h.t.Helper()
	if h.backend != "aws" {
		return 0
	}
	started := time.Now()
	var free *checkpoint.Lease
	for {
		l := procState(h).Lease
		switch {
		case l.Owner != "" && !l.Expires.IsZero() && l.Held(time.Now()):
			free = nil
			time.Sleep(time.Until(l.Expires) + 50*time.Millisecond)
		case free != nil && free.Owner == l.Owner && free.Token == l.Token && free.Expires.Equal(l.Expires):
			return time.Since(started)
		default:
			free = &l
			time.Sleep(time.Second)
		}
	}
}

// procKeepLogs writes the processes' output to a folder that outlives the
// test when it fails, and says where.
func procKeepLogs(t *testing.T, outs map[string]procOut) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir, err := os.MkdirTemp("", "reportjob-failed-")
		if err != nil {
			return
		}
		for name, o := range outs {
			os.WriteFile(filepath.Join(dir, name+".log"), []byte(o.String()+"\nfull stderr:\n"+o.stderr), 0o644)
		}
		t.Logf("process output kept in %s", dir)
	})
}

// procStop sends SIGSTOP to pid and waits until every thread of it is
// stopped. A stop signal is taken by one thread, which then stops the
// others: until it runs (on a loaded machine, milliseconds later), the
// others go on, and can read an answer or send a request.
func procStop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if procAllStopped(pid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: not every thread stopped 10 s after SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// procAllStopped reports whether every thread of pid is in state T.
func procAllStopped(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

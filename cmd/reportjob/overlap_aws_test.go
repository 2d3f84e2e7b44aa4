//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/testenv"
)

// Overlap on DynamoDB Local + versitygw (HTTPS): true overlap, the lease
// alone keeps processes apart. A storm of processes (schedule, runs,
// backfills, verify --repair) runs against one job while a lease holder is
// stopped (SIGSTOP) at an exact step of its publication, past its 5 s
// lease, then resumed (SIGCONT). The holder's S3 and DynamoDB requests go
// through recording proxies, which also stop it: after it resumes it
// must not apply one write (S3 PUT/POST/DELETE, DynamoDB write) — a
// refused conditional write is fine.
//
//	go test ./cmd/reportjob -run TestOverlapAWS -v                  the first episode
//	RJTEST_LONG=1 go test ./cmd/reportjob -run TestOverlapAWS -v    every episode

// zombieEpisode says which process is stopped, and at which request.
type zombieEpisode struct {
	name string
	// backfill makes the stopped process a backfill of the periods the
	// first run delivered (which rewrites the dedupe index's period
	// lists, not the sink).
	backfill bool
	// items per period: above 25, claims go out in several batches, some
	// during the dedupe, before the fence is checked again at its end.
	items int
	// stopAt tells, for each request the holder makes, whether to stop it
	// when the answer comes back: n counts its writes so far by service.
	stopAt func(r recReq, s3Writes, ddbWrites int) bool
	// stopPoint, when set instead of stopAt, is the RJTEST_STOP_AT point
	// at which the holder stops itself (crashpoint.Stop), and stopWhat
	// what its message must name (the request stopped).
	stopPoint, stopWhat string
}

// Every request the holder sends goes through fence.Client, and every
// write is checked against the lease's local deadline (both clocks) right
// before each of its writes to the socket (fence.Transport), for the claim
// writer's background batches, the period-list head and its cleanup, and
// each upload and delete alike. A holder stopped past its lease therefore
// sends no write when it resumes, wherever it was stopped, except in the
// residual window: a stop that lands between that check and the write
// system call right after it (a handful of instructions) sends those bytes
// late. No episode stops there; the proxy records a request when its
// headers arrive, so a request already on the wire when SIGSTOP landed
// counts as before the stop.

var zombieEpisodes = []zombieEpisode{
	// Default: every other upload waits for the intent's answer; none has
	// passed its last fence check when the holder stops.
	{name: "run-first-s3-write", items: 6, stopAt: func(r recReq, s3, _ int) bool { return r.Op == "" && s3 == 1 }},
	// The second claims BatchWriteItem (after the claim writer's
	// registration and its id list chunk).
	{name: "run-mid-claims", items: 400, stopAt: nthOp("BatchWriteItem", 2)},
	// Deterministic: the one claims BatchWriteItem of the period (20
	// items: the claims and the id list in one batch, sent by the claim
	// writer's Commit, which waits for it) stopped when the transport is
	// about to write it, after fence.Client.Do's check: the failure seen
	// under load (a claims batch sent 15 ms after SIGCONT). The check at
	// the socket refuses it.
	{name: "run-claims-stalled-after-check", items: 20, stopPoint: "fenced-write@BatchWriteItem:1", stopWhat: "BatchWriteItem"},
	// Long mode.
	{name: "run-fourth-s3-write", items: 6, stopAt: func(r recReq, s3, _ int) bool { return r.Op == "" && s3 == 4 }},
	{name: "run-manifest", items: 6, stopAt: func(r recReq, _, _ int) bool {
		return r.Op == "" && strings.HasSuffix(r.Path, "/manifest.json") && r.Method == "PUT"
	}},
	{name: "backfill-claims-list", backfill: true, items: 6,
		stopAt: func(r recReq, _, _ int) bool { return r.Op == "BatchWriteItem" }},
}

// nthOp stops at the nth DynamoDB write request of operation op.
func nthOp(op string, n int) func(r recReq, s3, ddb int) bool {
	seen := 0
	return func(r recReq, _, _ int) bool {
		if r.Op == op {
			seen++
		}
		return r.Op == op && seen == n
	}
}

func TestOverlapAWS(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	episodes := zombieEpisodes[:3]
	if procLong() {
		episodes = zombieEpisodes
	}
	// The episodes use stores of their own and spend most of their time
	// waiting for a lease to expire: they run side by side.
	var wg sync.WaitGroup
	for _, ep := range episodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(ep.name, func(t *testing.T) { overlapZombieAWS(t, bin, ep) })
		}()
	}
	wg.Wait()
}

func overlapZombieAWS(t *testing.T, bin string, ep zombieEpisode) {
	start := overlapStart()
	h := procHarness(t, "aws", overlapOptions(start))
	ref := procHarness(t, "aws", harnessOptions{period: "15m", start: start.Format(time.RFC3339),
		extra: "  lease_ttl: 5s\n  recheck_after: []"})
	items := overlapItems(start, ep.items)
	for _, x := range []*harness{h, ref} {
		if out := procRun(t, bin, x, nil, "init"); out.code != exitOK {
			t.Fatalf("init: %s", out)
		}
		putItems(x, items)
	}
	first := procRun(t, bin, h, nil, "run", "--now", start.Add(time.Hour).Format(time.RFC3339))
	if first.code != exitOK {
		t.Fatalf("first run: %s", first)
	}
	cp0 := procState(h).Checkpoint

	// The holder-to-be reaches the servers through recording proxies.
	s3p := newRecProxy(t, os.Getenv(testenv.EnvS3TLS))
	ddbp := newRecProxy(t, os.Getenv(testenv.EnvDynamoDB))
	zh := zombieHarness(t, h, s3p.URL(), ddbp.URL())
	var zpid atomic.Int64
	stopped := make(chan time.Time, 1)
	var mu sync.Mutex
	var s3Writes, ddbWrites int
	var once sync.Once
	hook := func(r recReq) {
		if !r.write() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if r.Op == "" {
			s3Writes++
		} else {
			ddbWrites++
		}
		if ep.stopAt(r, s3Writes, ddbWrites) {
			once.Do(func() {
				// Every thread stopped before the answer goes back.
				if err := procStop(int(zpid.Load())); err != nil {
					t.Error(err)
				}
				stopped <- time.Now()
			})
		}
	}
	var env []string
	var resumed atomic.Bool
	if ep.stopPoint == "" {
		s3p.setHook(hook)
		ddbp.setHook(hook)
	} else {
		env = []string{crashpoint.StopEnvVar + "=" + ep.stopPoint}
		// The answer to the first renewal after SIGCONT (which finds the
		// lease lost and cancels the run) is slow, as on a loaded
		// machine: the stalled write must be stopped by the fence, not by
		// losing that race.
		ddbp.setHook(func(r recReq) {
			if r.Op == "UpdateItem" && resumed.Load() {
				time.Sleep(time.Second)
			}
		})
	}
	args := []string{"run"}
	if ep.backfill {
		// The periods the first run delivered (a backfill stops at the
		// checkpoint).
		args = []string{"run", "--backfill", "--from", start.Format(time.RFC3339), "--to", cp0.Format(time.RFC3339)}
	}
	zombie := procCmd(bin, zh, env, args...)
	var zout, zerr bytes.Buffer
	zombie.Stdout, zombie.Stderr = &zout, &zerr
	zstarted := time.Now()
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	zpid.Store(int64(zombie.Process.Pid))
	defer zombie.Process.Kill()
	if ep.stopPoint != "" {
		// The holder stops itself: wait until every thread has.
		go func() {
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if procAllStopped(zombie.Process.Pid) {
					stopped <- time.Now()
					return
				}
			}
		}()
	}
	var tStop time.Time
	select {
	case tStop = <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatalf("the holder never reached its stop\n%s", procTail(zerr.String(), 20))
	}
	mu.Lock()
	t.Logf("holder stopped after %s (%d S3 writes, %d DynamoDB writes)", tStop.Sub(zstarted).Round(time.Millisecond), s3Writes, ddbWrites)
	mu.Unlock()

	// The storm, and a sampler of the checkpoint and lease token.
	st, err := openStore(context.Background(), h.cli())
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	token0 := procState(h).Lease.Token
	smp := newSampler(100*time.Millisecond, func() (time.Time, int64, bool) {
		s, err := st.Load(context.Background(), "e2e")
		if err != nil {
			t.Errorf("sample state: %v", err)
			return time.Time{}, 0, false
		}
		return s.Checkpoint, s.Lease.Token, true
	})
	now := time.Now().UTC().Format(time.RFC3339)
	s := newStorm(t, bin, h)
	s.schedule()
	s.loop("run", 100*time.Millisecond, "run")
	s.loop("run", 150*time.Millisecond, "run")
	s.loop("backfill", 300*time.Millisecond, "run", "--backfill", "--from", start.Format(time.RFC3339),
		"--to", start.Add(45*time.Minute).Format(time.RFC3339), "--now", now)
	s.loop("verify --repair", 300*time.Millisecond, "verify", "--repair", "--from", start.Format(time.RFC3339),
		"--to", start.Add(45*time.Minute).Format(time.RFC3339), "--now", now)

	// Resume the holder once its lease has expired, another process has
	// taken the lease, and (for a run) the checkpoint has gone past the
	// period it was publishing.
	waitUntil(t, 60*time.Second, "another process to take the lease over and move the checkpoint", func() bool {
		smp.mu.Lock()
		defer smp.mu.Unlock()
		return time.Since(tStop) > 6*time.Second && smp.lastToken > token0 &&
			(ep.backfill || smp.lastCP.After(cp0.Add(15*time.Minute)))
	})
	tCont := time.Now()
	resumed.Store(true)
	if err := zombie.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	zdone := make(chan procOut, 1)
	go func() { zdone <- procWait(zombie, zstarted) }()
	var zo procOut
	select {
	case zo = <-zdone:
	case <-time.After(60 * time.Second):
		t.Fatalf("the resumed holder did not exit within 60 s\n%s", procTail(zerr.String(), 20))
	}
	procKeepLogs(t, map[string]procOut{"zombie": zo})

	if ep.stopPoint != "" && !strings.Contains(zo.stderr, "stop point "+ep.stopPoint+" reached (POST / DynamoDB_20120810."+ep.stopWhat+")") {
		t.Errorf("the holder did not stop at %s on a %s:\n%s", ep.stopPoint, ep.stopWhat, procTail(zo.stderr, 20))
	}
	zsum := lastJSON(t, zo.stdout)
	// Issue 31: it says that it lost its lease, and to whom.
	if zo.code != exitFailed || !strings.Contains(fmt.Sprint(zsum["error"]), "lost its lease to ") || zsum["lease_holder"] == nil {
		t.Errorf("the resumed holder: exit %d, %v; want 1 and a lost lease", zo.code, zsum)
	}
	// Every request the holder sent after SIGCONT: a write applied, or an
	// unconditional write sent at all (it may have been applied however
	// it ended), is a zombie write. A conditional write refused (the
	// renewal or release of the lost lease) is the store fencing it.
	after := append(s3p.since(tCont), ddbp.since(tCont)...)
	var refused int
	var sent []string
	for _, r := range after {
		sent = append(sent, fmt.Sprintf("%s%s %s -> %d", r.Op, map[bool]string{true: " (conditional)"}[r.Conditional],
			r.Method, r.Status))
		// A write may have been applied when it was answered 2xx, when it
		// was unconditional, or when no clear answer came back (the client
		// gave up: 0 or a proxy 502) — except the job's state writes,
		// conditional on the lease token, which the new holder changed.
		unknown := r.Status == 0 || r.Status >= 500
		stateWrite := r.Op != "" && r.Conditional && !r.Index
		zombie := r.write() && (r.succeeded() || !r.Conditional || (unknown && !stateWrite))
		switch {
		case zombie:
			t.Errorf("ZOMBIE WRITE after its lease expired: %s %s %s, conditional %v -> status %d (%s after SIGCONT)",
				r.Op, r.Method, r.Path, r.Conditional, r.Status, r.At.Sub(tCont).Round(time.Millisecond))
		case r.write():
			refused++
		}
	}
	if t.Failed() {
		for _, r := range append(s3p.since(time.Time{}), ddbp.since(time.Time{})...) {
			t.Logf("holder request at %s: %s %s %s conditional %v -> %d", r.At.Format("15:04:05.000"), r.Op, r.Method, r.Path, r.Conditional, r.Status)
		}
		t.Logf("stopped at %s, resumed at %s", tStop.Format("15:04:05.000"), tCont.Format("15:04:05.000"))
	}
	t.Logf("resumed after %s stopped: exit %d (%v); after SIGCONT it sent %d requests: %d state writes refused (conditional on the lease): %v",
		tCont.Sub(tStop).Round(time.Millisecond), zo.code, zsum["error"], len(after), refused, sent)

	time.Sleep(2 * time.Second) // the storm goes on a little
	s.end()
	samples := smp.end(t)
	s.checkExits()
	t.Logf("storm: %s; %s", s.counts(), samples)
	overlapFinish(t, bin, h, ref, start, time.Now().UTC().Format(time.RFC3339),
		append(s.stderrs(), first.stderr, zo.stderr))
}

// zombieHarness is h's job (same tables and bucket) with the S3 and
// DynamoDB endpoints replaced by the proxies'.
func zombieHarness(t *testing.T, h *harness, s3, ddb string) *harness {
	t.Helper()
	cfg, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	text := string(cfg)
	for old, repl := range map[string]string{os.Getenv(testenv.EnvS3TLS): s3, os.Getenv(testenv.EnvDynamoDB): ddb} {
		if !strings.Contains(text, fmt.Sprintf("%q", old)) {
			t.Fatalf("config has no endpoint %s:\n%s", old, text)
		}
		text = strings.ReplaceAll(text, fmt.Sprintf("%q", old), fmt.Sprintf("%q", repl))
	}
	zh := *h
	zh.dir = t.TempDir()
	zh.config = zh.dir + "/config.yaml"
	if err := os.WriteFile(zh.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return &zh
}

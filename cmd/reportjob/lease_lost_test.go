//go:build linux

package main

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// TestLeaseLostNamesHolder (issue 31): a run stopped (SIGSTOP) in a claims
// BatchWriteItem on DynamoDB Local, past its 5 s lease and its 2 s batch
// deadline, while another run takes the lease over and delivers. Resumed,
// it exited 1 on "batch write ... gave up after ... context deadline
// exceeded" or "write refused": it must say that it lost its lease, and
// to whom (the store's lease holder), in the error and in lease_holder.
//
//	go test ./cmd/reportjob -run TestLeaseLostNamesHolder -v
func TestLeaseLostNamesHolder(t *testing.T) {
	bin := procBinary(t)
	start := overlapStart()
	h := procHarness(t, "aws", harnessOptions{period: "15m", start: start.Format(time.RFC3339),
		extra: "  lease_ttl: 5s\n  recheck_after: []"})
	if out := procRun(t, bin, h, nil, "init"); out.code != exitOK {
		t.Fatalf("init: %s", out)
	}
	putItems(h, overlapItems(start, 20))
	now := start.Add(time.Hour).Format(time.RFC3339)

	zombie := procCmd(bin, h, []string{crashpoint.StopEnvVar + "=fenced-write@BatchWriteItem:1", envTestBatchDeadline + "=2s"}, "run", "--now", now)
	var zout, zerr bytes.Buffer
	zombie.Stdout, zombie.Stderr = &zout, &zerr
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Process.Kill()
	started := time.Now()
	waitUntil(t, 60*time.Second, "the run to stop at its first claims batch", func() bool { return procAllStopped(zombie.Process.Pid) })
	stopped := time.Now()
	ours := procState(h).Lease

	// Past its lease, another run takes the job over and delivers.
	time.Sleep(time.Until(stopped.Add(6 * time.Second)))
	other := procRun(t, bin, h, nil, "run", "--now", now)
	if other.code != exitOK {
		t.Fatalf("the run beside the stopped one: %s", other)
	}
	taker := procState(h).Lease
	if taker.Token <= ours.Token || taker.Owner == ours.Owner {
		t.Fatalf("lease after the other run %+v, the stopped run's %+v: want another holder", taker, ours)
	}

	if err := zombie.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	zo := procWait(zombie, started)
	sum := lastJSON(t, zo.stdout)
	msg := fmt.Sprint(sum["error"])
	want := fmt.Sprintf("this run (%s) lost its lease to %s (token %d", ours.Owner, taker.Owner, taker.Token)
	if zo.code != exitFailed || sum["status"] != "failed" || !strings.Contains(msg, want) || sum["lease_holder"] != taker.Owner {
		t.Fatalf("the resumed run: exit %d, %v; want exit 1, status failed, lease_holder %s and %q in its error\n%s",
			zo.code, sum, taker.Owner, want, procTail(zerr.String(), 20))
	}
	t.Logf("stopped %s, resumed: exit 1: %s", time.Since(stopped).Round(time.Millisecond), msg)
}

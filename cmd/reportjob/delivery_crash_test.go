//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// dlvTrials is how many kill -9 trials each stack runs (>= 100 in all).
var dlvTrials = map[string]int{"embedded": 60, "aws": 44}

// TestDeliveryCrashTrials kills the run that closes January and sends its
// e-mails and events at random moments, then reruns it once: every
// statement of an agency with an address reaches it and every event its
// endpoint; a delivery arrives twice only when the kill fell between the
// server's acceptance and the outbox record (crash point
// delivery-after-send, or a timed kill, which can hit that window for the
// one delivery in flight), and the copies carry the same Message-ID /
// event id. In half the trials the endpoint is down during the killed run
// (503, a timeout or a dropped connection) and back for the rerun.
//
// A trial kills at one of: delivery-after-send:K (the window: exactly one
// duplicate when reached), delivery-before-send:K (none), or a SIGKILL
// after a random delay within an uncrashed run's duration (at most one).
//
//	go test ./cmd/reportjob -run TestDeliveryCrashTrials -v   (RJTEST_SEED replays)
func TestDeliveryCrashTrials(t *testing.T) {
	t.Parallel()
	bin := procBinary(t)
	seed := crashSeed(t)
	onBothStacks(t, func(t *testing.T, backend string) ([]string, func(*testing.T, string)) {
		// The reference: how long an uncrashed run takes.
		ref := newDlv(t, bin, backend)
		started := time.Now()
		ref.r.run(dlvNow, map[string]any{"status": "ok"})
		took := time.Since(started)
		var mu sync.Mutex
		stats := map[string]int{}
		t.Cleanup(func() {
			crashLine(t, "delivery crash trials on %s (seed %d): %d trials, %v; an uncrashed run takes %s",
				backend, seed, dlvTrials[backend], stats, took.Round(time.Millisecond))
		})
		var cases []string
		for i := range dlvTrials[backend] {
			cases = append(cases, fmt.Sprintf("trial-%03d", i))
		}
		return cases, func(t *testing.T, c string) {
			var n int
			fmt.Sscanf(c, "trial-%d", &n)
			rng := rand.New(rand.NewPCG(seed, uint64(n)+map[string]uint64{"embedded": 0, "aws": 1 << 32}[backend]))
			outcome := dlvTrial(t, bin, backend, rng, took)
			mu.Lock()
			stats[outcome]++
			mu.Unlock()
		}
	})
}

// dlvTrial runs one trial and returns how it went, for the summary line.
func dlvTrial(t *testing.T, bin, backend string, rng *rand.Rand, took time.Duration) string {
	d := newDlv(t, bin, backend)
	down := ""
	if rng.IntN(2) == 1 {
		down = []string{"503", "timeout", "drop"}[rng.IntN(3)]
		d.rcv.mode.Store(down)
	}
	sends := 2 + 6 // the e-mails of acme and beta, the events
	if down != "" {
		sends = 2
	}
	var crash procOut
	var how string
	switch k := 1 + rng.IntN(sends); rng.IntN(3) {
	case 0:
		how = fmt.Sprintf("%s:%d", crashpoint.DeliveryAfterSend, k)
		crash = procRun(t, bin, d.r.h, []string{crashpoint.EnvVar + "=" + how}, "run", "--now", dlvNow)
	case 1:
		how = fmt.Sprintf("%s:%d", crashpoint.DeliveryBeforeSend, k)
		crash = procRun(t, bin, d.r.h, []string{crashpoint.EnvVar + "=" + how}, "run", "--now", dlvNow)
	default:
		delay := time.Duration(rng.Int64N(int64(took) + 1))
		how = "kill after " + delay.Round(time.Millisecond).String()
		crash = procKillAfter(t, bin, d.r.h, delay, "run", "--now", dlvNow)
	}
	d.rcv.mode.Store("ok")
	procWaitLease(d.r.h)
	rerun := procRun(t, bin, d.r.h, nil, "run", "--now", dlvNow)
	procKeepLogs(t, map[string]procOut{"crash": crash, "rerun": rerun})
	if rerun.code != exitOK {
		t.Fatalf("%s (endpoint down: %q): the rerun: %s", how, down, rerun)
	}
	mids, events, _ := d.expected(t)
	dups := 0
	for agency, m := range d.mails(t) {
		want, ok := mids[agency]
		if !ok {
			continue
		}
		if len(m.ids) == 0 {
			t.Errorf("%s: agency %s got no statement", how, agency)
		}
		for _, id := range m.ids {
			if id != want {
				t.Errorf("%s: agency %s got Message-ID %s, want %s", how, agency, id, want)
			}
		}
		dups += max(len(m.ids)-1, 0)
	}
	counts := d.rcv.counts()
	for id, typ := range events {
		if counts[id] == 0 {
			t.Errorf("%s: event %s (%s) never delivered", how, id, typ)
		}
		dups += max(counts[id]-1, 0)
	}
	if len(counts) != len(events) || d.rcv.badSig.Load() != 0 {
		t.Errorf("%s: the endpoint accepted ids %v (%d bad signatures), want the %d events", how, counts, d.rcv.badSig.Load(), len(events))
	}
	inWindow := crash.killed && strings.HasPrefix(how, string(crashpoint.DeliveryAfterSend))
	switch {
	case inWindow && dups != 1:
		t.Errorf("%s: %d duplicates, want exactly 1 (the delivery accepted before the crash)", how, dups)
	case strings.HasPrefix(how, "kill") && dups > 1:
		t.Errorf("%s: %d duplicates, want at most 1 (the delivery in flight)", how, dups)
	case !inWindow && !strings.HasPrefix(how, "kill") && dups != 0:
		t.Errorf("%s: %d duplicates, want none", how, dups)
	}
	switch {
	case !crash.killed:
		return "not killed"
	case dups > 0:
		return "killed, 1 duplicate"
	}
	return "killed, no duplicate"
}

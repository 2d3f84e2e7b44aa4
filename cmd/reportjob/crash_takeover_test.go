//go:build linux

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// TestCrashEmbeddedTakeover is issue 9's known issue: after SIGKILL, a
// rerun on the embedded store must not exit 3 while the dead process's
// lease (default TTL 2m) has not expired. The file lock proves the holder
// dead, so the rerun takes the lease over at once, with the next token.
//
//	go test ./cmd/reportjob -run TestCrashEmbeddedTakeover -v
func TestCrashEmbeddedTakeover(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	s := newCrashScenario()
	defer s.cleanup()
	h := s.setup(t, bin, "embedded")
	crash := procRun(t, bin, h, []string{crashpoint.EnvVar + "=after-claims:1"}, "run", "--now", csNow)
	if !crash.killed {
		t.Fatalf("the run was not killed: %s", crash)
	}
	dead := procState(h).Lease
	if !dead.Held(time.Now()) || time.Until(dead.Expires) < time.Minute || !strings.Contains(dead.Owner, "/"+strconv.Itoa(crash.pid)+"/") {
		t.Fatalf("the dead holder's lease %+v: want the killed process's (pid %d), still valid for a minute or more", dead, crash.pid)
	}
	rerun := procRun(t, bin, h, nil, "run", "--now", csNow)
	if rerun.code != exitOK {
		t.Fatalf("the rerun with the dead holder's lease unexpired: %s", rerun)
	}
	sum := lastJSON(t, rerun.stdout)
	if sum["status"] != "ok" || opsInt(t, sum, "periods_processed") != 4 {
		t.Errorf("rerun summary: %v", sum)
	}
	l := procState(h).Lease
	if l.Token != dead.Token+1 || !strings.HasSuffix(l.Owner, "/"+sum["run_id"].(string)) || l.Owner == dead.Owner {
		t.Errorf("lease after the rerun %+v, dead holder's %+v: want the rerun's, token %d", l, dead, dead.Token+1)
	}
	t.Logf("dead holder %s (token %d, valid %s more) taken over at once: rerun exit 0 in %s, token %d",
		dead.Owner, dead.Token, time.Until(dead.Expires).Round(time.Second), rerun.took.Round(time.Millisecond), l.Token)
}

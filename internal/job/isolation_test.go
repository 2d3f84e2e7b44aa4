package job_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestAgencyIsolation: an agency whose objects the sink cannot store (its
// escaped id makes a key longer than the sink allows) becomes rejects with
// a reason; the other agencies are delivered and the checkpoint moves.
func TestAgencyIsolation(t *testing.T) {
	e := newEnv(t, embeddedStack)
	long := strings.Repeat("é", 20) // 120 bytes escaped
	e.put(purchase("t-1", "fine", 100, at(0, 1)), purchase("t-2", long, 200, at(0, 2)), purchase("t-3", long, 300, at(0, 3)))
	// Keys of "fine" are ~75 bytes; of the long agency, ~190.
	e.drv.maxKey = 120
	res := e.run(e.job("A"), job.RunOptions{Now: at(1, 2)})
	m := res.Periods[0].Manifest
	if m.Transactions != 1 || m.Rejects != 2 || !e.state().Checkpoint.Equal(at(1, 0)) {
		t.Fatalf("manifest: %d transactions, %d rejects; checkpoint %s", m.Transactions, m.Rejects, e.state().Checkpoint)
	}
	rejects := e.read(e.keysUnder("rejects/")[0])
	if !strings.Contains(rejects, `"field":"agency_id"`) || !strings.Contains(rejects, "its report objects cannot be stored") {
		t.Errorf("rejects:\n%s", rejects)
	}
	if got := e.keysUnder("agency=fine/"); len(got) != 2 {
		t.Errorf("agency fine: %q", got)
	}
	e.checkSink()
}

// TestFailedBuildsLeakNothing: builds that fail (an upload error, a query
// error) leave the process's open files and the temp folder as they were.
func TestFailedBuildsLeakNothing(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(3, 0), 20)
	bad := purchase("bad", "a-0", 1, at(0, 5))
	bad.Attrs["amount"] = bad.Attrs["currency"] // a reject: the reject log is a temp file
	e.put(bad)
	fds := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(entries)
	}
	boom := errors.New("injected")
	run := func(fail string) {
		e.drv.setFail(func(key string) error {
			if strings.Contains(key, fail) {
				return boom
			}
			return nil
		})
		j := e.job("A")
		j.SortMemBytes = 1 << 10 // spill: sort runs are temp files too
		if _, err := j.Run(context.Background(), job.RunOptions{Now: at(3, 2)}); !errors.Is(err, boom) {
			t.Fatalf("run failing on %s: %v", fail, err)
		}
	}
	run("summary/") // warm up whatever the process opens once
	before := fds()
	for range 5 {
		for _, fail := range []string{"summary/", "transactions/", "rejects/", report.DirManifests + "/"} {
			run(fail)
		}
	}
	if after := fds(); after > before {
		t.Errorf("open files: %d before, %d after 20 failed runs", before, after)
	}
	if left := osReadDir(t, e.tempDir); len(left) != 0 {
		t.Errorf("temp folder holds %v", left)
	}
	e.drv.setFail(nil)
	e.run(e.job("B"), job.RunOptions{Now: at(3, 2)})
	e.checkSink()
}

package job_test

import (
	"context"
	"testing"

	"github.com/reportjob/reportjob/internal/job"
)

// TestRepairCountsRestoredObjects: after one object of a period is
// deleted, verify --repair says it restored one object, not every object
// of the revision it wrote back (the README's walkthrough shows this line).
func TestRepairCountsRestoredObjects(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("t-1", "acme", 1000, at(10, 5)), purchase("t-2", "globex", 500, at(10, 6)))
	j := e.job("A")
	j.RecheckAfter = nil
	e.run(j, job.RunOptions{Now: at(11, 2)})
	if n := len(e.keysUnder("period=20900301T1000Z/")); n < 4 {
		t.Fatalf("the period has %d objects: too few to tell one from all", n)
	}
	e.remove(e.keysUnder("agency=acme/period=20900301T1000Z/summary-")[0])
	checks, err := e.job("V").Verify(context.Background(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Repair: true, Now: at(11, 30)})
	if err != nil || len(checks) != 1 {
		t.Fatalf("verify --repair: %+v, %v", checks, err)
	}
	if got, want := checks[0].Repaired, "restored 1 object(s) of revision 1"; got != want {
		t.Errorf("repaired: %q, want %q", got, want)
	}
	e.checkSink()
}

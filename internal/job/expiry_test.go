package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/job"
)

// TestClaimsKeptFromTheWallClock: a run whose report clock is in the past
// (run --now, a replay) keeps its claims ClaimRetention after the report
// clock on the embedded store, which sweeps by the report clock, and after
// the wall clock on DynamoDB, whose Time to Live deletes by the wall clock:
// before, they expired there at once, and a retry in a later period within
// the window was billed again (a reviewer's test, with the expired items
// deleted by hand).
func TestClaimsKeptFromTheWallClock(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		e.put(purchase("tx-old", "a-0", 1999, day0.Add(10*time.Minute)))
		report := day0.Add(time.Hour + 5*time.Minute)
		wall := day0.AddDate(0, 6, 0)
		e.clock.t = wall
		j := e.job("a")
		j.MaxPeriods = 1
		e.run(j, job.RunOptions{Now: report})

		claims, err := e.st.Lookup(context.Background(), jobName, []string{"tx-old"})
		if err != nil || len(claims) != 1 {
			t.Fatalf("Lookup: %v %+v", err, claims)
		}
		from := report
		if _, ok := e.st.(collect.WallClockIndex); ok {
			from = wall
		}
		if want := from.Add(collect.ClaimRetention(j.DedupeWindow)); !claims[0].Expires.Equal(want) {
			t.Errorf("claim expires %v, want %v (report clock %v, wall clock %v)", claims[0].Expires, want, report, wall)
		}
	})
}

package job_test

import (
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestBackfillConflictRemovesAgency: when a backfill turns an agency's only
// transaction into conflict rejects, no object of that agency remains in
// the period, the summary no longer has it, and its adjustments say so.
func TestBackfillConflictRemovesAgency(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("t-1", "keep", 1000, at(0, 5)), purchase("t-2", "gone", 2000, at(0, 6)))
	e.run(e.job("A"), job.RunOptions{Now: at(1, 2)})
	if got := e.keysUnder("agency=gone/period=20900301T0000Z/"); len(got) != 2 {
		t.Fatalf("agency gone has %q", got)
	}
	// A second copy of t-2 with other content: a conflict.
	e.put(purchase("t-2", "gone", 2500, at(0, 30)))
	res := e.run(e.job("B"), job.RunOptions{Now: at(1, 30), Backfill: true, From: at(0, 0), To: at(1, 0)})
	pr := res.Periods[0]
	if !pr.Restated() || pr.Manifest.Reason != report.ReasonBackfill || pr.Manifest.Rejects != 2 || pr.Manifest.Transactions != 1 {
		t.Fatalf("backfill: %s, manifest %+v", pr.Outcome, pr.Manifest)
	}
	var gone []string
	for key := range e.objects() {
		if strings.Contains(key, "agency=gone/") && !strings.Contains(key, "adjustments-") {
			gone = append(gone, key)
		}
	}
	if len(gone) != 0 {
		t.Errorf("agency gone still has %q", gone)
	}
	if adj := e.keysUnder("agency=gone/period=20900301T0000Z/adjustments-"); len(adj) != 1 ||
		!strings.Contains(e.read(adj[0]), "gone,USD,-1,0,-20.00,0.00,-20.00,-2.00,2") {
		t.Errorf("adjustments of gone: %q", adj)
	}
	if !e.state().Checkpoint.Equal(at(1, 0)) {
		t.Error("backfill moved the checkpoint")
	}
	e.checkSink()
}

// TestBackfillFormats: turning line items off removes the period's
// transactions objects; turning agency Parquet on adds files; every object
// stays listed.
func TestBackfillFormats(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(1, 0), 4)
	e.run(e.job("A"), job.RunOptions{Now: at(1, 2)})
	if len(e.keysUnder("transactions")) == 0 {
		t.Fatal("no transactions objects")
	}
	j := e.job("B")
	j.LineItems = false
	j.AgencyFiles = encode.Formats{CSV: true, Parquet: true}
	res := e.run(j, job.RunOptions{Now: at(1, 30), Backfill: true, From: at(0, 0), To: at(1, 0)})
	if !res.Periods[0].Restated() {
		t.Fatalf("backfill outcome %s", res.Periods[0].Outcome)
	}
	if got := e.keysUnder("transactions"); len(got) != 0 {
		t.Errorf("transactions objects left: %q", got)
	}
	if got := e.keysUnder("period=20900301T0000Z/summary-"); len(got) != 1+3*2 {
		t.Errorf("summary objects: %q", got)
	}
	// Nothing changed in money: no adjustments.
	if got := e.keysUnder("adjustments"); len(got) != 0 {
		t.Errorf("adjustments for a format change: %q", got)
	}
	e.checkSink()
}

package job_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
)

// TestVerify: verify names the period with late items, a deleted object,
// a corrupted object, an unlisted object, and a missing manifest;
// --repair fixes each, and a second verify finds nothing.
func TestVerify(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		e.putHourly(at(0, 0), at(6, 0), 3)
		j := e.job("A")
		j.RecheckAfter = nil
		e.run(j, job.RunOptions{Now: at(6, 2)})
		verify := func(repair bool) map[string]job.PeriodCheck {
			t.Helper()
			checks, err := e.job("V").Verify(context.Background(), job.VerifyOptions{From: at(0, 0), To: at(7, 0), Repair: repair, Now: at(7, 30)})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]job.PeriodCheck{}
			for _, c := range checks {
				out[c.Period.Name()] = c
			}
			return out
		}
		for name, c := range verify(false) {
			if c.Differs || (c.Status != job.VerifyOK && c.Status != job.VerifyNotDelivered) {
				t.Fatalf("clean sink: %s %s %v", name, c.Status, c.Problems)
			}
		}
		// 01:00: late items. 02:00: an object deleted. 03:00: an object
		// corrupted. 04:00: an unlisted object. 05:00: manifest deleted.
		e.put(purchase("late", "a-0", 500, at(1, 59)))
		e.remove(e.keysUnder("summary/period=20900301T0200Z/")[0])
		e.write(e.keysUnder("agency=a-1/period=20900301T0300Z/summary-")[0], "not a csv")
		e.write("transactions/period=20900301T0400Z/transactions-0000000000000000.parquet", "stray")
		e.remove(report.ManifestKey(hour(5)))

		got := verify(false)
		want := map[string]string{
			"20900301T0000Z": job.VerifyOK,
			"20900301T0100Z": job.VerifyItemsChanged,
			"20900301T0200Z": job.VerifyObjects,
			"20900301T0300Z": job.VerifyObjects,
			"20900301T0400Z": job.VerifyObjects,
			"20900301T0500Z": job.VerifyNoManifest,
			"20900301T0600Z": job.VerifyNotDelivered,
		}
		for name, status := range want {
			if got[name].Status != status {
				t.Errorf("%s: %s %v, want %s", name, got[name].Status, got[name].Problems, status)
			}
		}
		kinds := func(c job.PeriodCheck) string {
			var k []string
			for _, p := range c.Problems {
				k = append(k, p.Kind)
			}
			return strings.Join(k, ",")
		}
		if kinds(got["20900301T0200Z"]) != publish.ProblemMissing || kinds(got["20900301T0300Z"]) != publish.ProblemCorrupt ||
			kinds(got["20900301T0400Z"]) != publish.ProblemUnlisted {
			t.Errorf("problems: 02 %q, 03 %q, 04 %q", kinds(got["20900301T0200Z"]), kinds(got["20900301T0300Z"]), kinds(got["20900301T0400Z"]))
		}
		if c := got["20900301T0100Z"]; c.ItemsManifest != 3 || c.ItemsNow != 4 {
			t.Errorf("01:00 items %d -> %d", c.ItemsManifest, c.ItemsNow)
		}

		repaired := verify(true)
		for name, c := range repaired {
			if c.Differs && c.Repaired == "" {
				t.Errorf("%s differs and was not repaired", name)
			}
		}
		if m := e.manifest(hour(1)); m.Revision != 2 || m.Reason != report.ReasonRepair || m.Transactions != 4 {
			t.Errorf("01:00 after repair: revision %d (%s), %d transactions", m.Revision, m.Reason, m.Transactions)
		}
		if m := e.manifest(hour(2)); m.Revision != 1 {
			t.Errorf("02:00 (object restored) revision %d, want 1", m.Revision)
		}
		for name, c := range verify(false) {
			if c.Differs {
				t.Errorf("after repair: %s %s %v", name, c.Status, c.Problems)
			}
		}
		e.checkSink()
	})
}

// TestRepairKeepsRestatedRevision: repairing a missing object of a
// restated revision (one with adjustments), the adjustments Parquet
// included, restores it byte for byte and keeps the revision; so does a
// backfill of its unchanged items.
func TestRepairKeepsRestatedRevision(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("t-1", "acme", 1000, at(10, 5)))
	e.run(e.job("A"), job.RunOptions{Now: at(11, 2)})
	e.put(purchase("t-late", "acme", 250, at(10, 59)))
	e.run(e.job("B"), job.RunOptions{Now: at(12, 2)}) // recheck: revision 2
	if m := e.manifest(hour(10)); m.Revision != 2 || len(e.keysUnder("adjustments")) != 2 {
		t.Fatalf("revision %d, adjustments %q", m.Revision, e.keysUnder("adjustments"))
	}
	before := e.objects()
	for _, key := range []string{
		e.keysUnder("agency=acme/period=20900301T1000Z/summary-")[0],
		e.keysUnder("agency=acme/period=20900301T1000Z/adjustments-")[0],
		e.keysUnder("adjustments/period=20900301T1000Z/")[0],
	} {
		e.remove(key)
		checks, err := e.job("V").Verify(context.Background(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Repair: true, Now: at(12, 30)})
		if err != nil || len(checks) != 1 || !checks[0].Differs {
			t.Fatalf("verify --repair after removing %s: %+v, %v", key, checks, err)
		}
		if m := e.manifest(hour(10)); m.Revision != 2 {
			t.Errorf("after repairing %s: revision %d, want 2 (%s)", key, m.Revision, checks[0].Repaired)
		}
		if after := e.objects(); !mapsEqual(before, after) {
			t.Errorf("after repairing %s: the objects differ from before", key)
		}
	}
	res := e.run(e.job("C"), job.RunOptions{Now: at(12, 30), Backfill: true, From: at(10, 0), To: at(11, 0)})
	if res.Periods[0].Outcome != job.OutcomeUnchanged {
		t.Errorf("backfill of the unchanged restated period: %s", res.Periods[0].Outcome)
	}
}

package job_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestItemsFingerprintVersionKept: a period delivered with a version 1
// items fingerprint (as every period delivered before versions were
// recorded: its manifest without items_fingerprint_version) is read again
// in version 1, so a backfill and a recheck find it unchanged; a
// restatement of it keeps version 1; a new period gets version 2, where
// an item rewritten with the same amount in other digits is no change and
// a new amount is one.
func TestItemsFingerprintVersionKept(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(2, 0), 6)
	jobAt := func(owner string) *job.Job {
		j := e.job(owner)
		j.RecheckAfter = nil
		return j
	}
	e.run(jobAt("A"), job.RunOptions{Now: at(2, 2)})
	if got := e.manifest(hour(0)).ItemsFingerprintVersion; got != report.LatestItemsFingerprint {
		t.Fatalf("a new period has items_fingerprint_version %d, want %d", got, report.LatestItemsFingerprint)
	}
	v1 := e.toFingerprint1(jobAt("X"), hour(0))
	old := e.read(report.ManifestKey(hour(0)))
	if strings.Contains(old, "items_fingerprint_version") {
		t.Fatal("the version-1 manifest records a version")
	}

	// A backfill reads it in version 1: unchanged, nothing written.
	e.drv.takePuts()
	res := e.run(jobAt("B"), job.RunOptions{Now: at(2, 30), Backfill: true, From: at(0, 0), To: at(1, 0)})
	if pr := res.Periods[0]; pr.Outcome != job.OutcomeUnchanged || pr.Manifest.Revision != 1 {
		t.Fatalf("backfill of a version-1 period: %s revision %d", pr.Outcome, pr.Manifest.Revision)
	}
	if puts := e.drv.takePuts(); len(puts) != 0 {
		t.Errorf("backfill wrote %q", puts)
	}
	checks, err := jobAt("V").Verify(context.Background(), job.VerifyOptions{From: at(0, 0), To: at(1, 0), Now: at(2, 40)})
	if err != nil {
		t.Fatal(err)
	}
	if c := checks[0]; c.Status != job.VerifyOK {
		t.Errorf("verify of the version-1 period: %+v", c)
	}

	// A late item: restated, still in version 1.
	e.put(purchase("tx-late", "a-1", 500, at(0, 30)))
	res = e.run(jobAt("C"), job.RunOptions{Now: at(2, 45), Backfill: true, From: at(0, 0), To: at(1, 0)})
	m := res.Periods[0].Manifest
	if res.Periods[0].Outcome != job.OutcomePublished || m.Revision != 2 {
		t.Fatalf("restatement: %s revision %d", res.Periods[0].Outcome, m.Revision)
	}
	if m.FingerprintVersion() != report.ItemsFingerprint1 || m.ItemsFingerprint == v1 {
		t.Errorf("restatement: fingerprint %s version %d, want a new version-1 fingerprint", m.ItemsFingerprint, m.FingerprintVersion())
	}

	// The second hour, version 2: the same amount written "19.990" is no
	// change; 19.98 is one.
	rewrite := func(amount string) {
		it := e.firstItem(hour(1))
		it.Attrs[item.AttrAmount] = item.N(amount)
		e.put(it)
	}
	rewrite("19.990")
	res = e.run(jobAt("D"), job.RunOptions{Now: at(2, 50), Backfill: true, From: at(1, 0), To: at(2, 0)})
	if pr := res.Periods[0]; pr.Outcome != job.OutcomeUnchanged || pr.Manifest.Revision != 1 {
		t.Fatalf("an amount written otherwise: %s revision %d, want unchanged", pr.Outcome, pr.Manifest.Revision)
	}
	rewrite("19.98")
	res = e.run(jobAt("E"), job.RunOptions{Now: at(2, 55), Backfill: true, From: at(1, 0), To: at(2, 0)})
	if pr := res.Periods[0]; pr.Outcome != job.OutcomePublished || pr.Manifest.Revision != 2 ||
		pr.Manifest.ItemsFingerprintVersion != report.ItemsFingerprint2 {
		t.Fatalf("a new amount: %s revision %d version %d, want revision 2 in version 2",
			pr.Outcome, pr.Manifest.Revision, pr.Manifest.ItemsFingerprintVersion)
	}
}

// toFingerprint1 rewrites the manifest of p as a binary from before
// versions wrote it: the version 1 fingerprint of the period's items, no
// items_fingerprint_version. It returns that fingerprint.
func (e *env) toFingerprint1(j *job.Job, p report.Period) string {
	e.t.Helper()
	col, err := collect.Read(context.Background(), collect.Config{Shards: j.Shards, Dir: e.t.TempDir(),
		Fingerprint: report.ItemsFingerprint1}, j.Source, p)
	if err != nil {
		e.t.Fatal(err)
	}
	defer col.Close()
	m := e.manifest(p)
	if m.ItemsFingerprint == col.Fingerprint.String() {
		e.t.Fatal("toFingerprint1: versions 1 and 2 agree")
	}
	m.ItemsFingerprint, m.ItemsFingerprintVersion = col.Fingerprint.String(), 0
	body, err := m.Marshal()
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(report.ManifestKey(p), string(body))
	return m.ItemsFingerprint
}

// firstItem returns the item of p with the smallest keys.
func (e *env) firstItem(p report.Period) item.Item {
	e.t.Helper()
	for _, pk := range report.Partitions(p, 1) {
		var first *item.Item
		err := e.st.Query(context.Background(), pk, "", func(page []item.Item) error {
			if first == nil && len(page) > 0 {
				first = &page[0]
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
		if first != nil {
			return *first
		}
	}
	e.t.Fatalf("no item in %s", p.Name())
	return item.Item{}
}

package job_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// bigAgencies is the size of the big period: 20,000 agencies with line
// items and agency CSVs are 40,005 objects, a manifest listing every one
// of them inline would be about 9 MB (over the 5 MiB of a conditional put).
const bigAgencies = 20_000

// TestBigPeriodPublishes (issue 15 point 8): a period of 20,000 agencies
// publishes, moves the checkpoint, and verifies clean; its manifest.json
// stays small and quick to read (the per-agency object list is in part
// objects it commits to by SHA-256); a rerun changes nothing; a late item
// for one agency restates it and leaves no part of revision 1 behind.
func TestBigPeriodPublishes(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 agencies: not in -short")
	}
	run := func(t *testing.T, s stack) {
		e := newEnv(t, s)
		items := make([]item.Item, 0, bigAgencies)
		for i := range bigAgencies {
			items = append(items, purchase(fmt.Sprintf("tx-%05d", i), fmt.Sprintf("agency-%05d", i), 1000+int64(i%7), at(0, i%60)))
		}
		e.put(items...)
		j := e.job("A")
		started := time.Now()
		res := e.run(j, job.RunOptions{Now: at(1, 5)})
		t.Logf("published %d agencies in %s", bigAgencies, time.Since(started).Round(time.Millisecond))
		if len(res.Periods) != 1 || res.Periods[0].Outcome != job.OutcomePublished || !res.Checkpoint.Equal(at(1, 0)) {
			t.Fatalf("run: %+v, checkpoint %s; want hour 0 published, checkpoint %s", res.Periods, res.Checkpoint, at(1, 0))
		}

		// manifest.json alone: small, and quick to read.
		started = time.Now()
		raw := e.read(report.ManifestKey(hour(0)))
		readRaw := time.Since(started)
		if len(raw) > 64<<10 {
			t.Errorf("manifest.json is %d bytes, want at most 64 KiB", len(raw))
		}
		// The whole manifest, parts included, through the one reader.
		started = time.Now()
		m := e.manifest(hour(0))
		readAll := time.Since(started)
		t.Logf("manifest.json %d bytes read in %s; with its %d parts in %s", len(raw), readRaw, len(m.Parts), readAll)
		if readAll > 10*time.Second {
			t.Errorf("reading the manifest took %s, want under 10s", readAll)
		}
		if want := 2*bigAgencies + 2; len(m.Files) != want { // + summary and transactions Parquet
			t.Errorf("manifest lists %d objects, want %d", len(m.Files), want)
		}
		var rows int64
		for _, f := range m.Files {
			if _, ok := report.AgencySegment(f.Key); ok && f.Rows > 0 {
				rows += f.Rows
			}
		}
		if m.Transactions != bigAgencies || rows != 2*bigAgencies {
			t.Errorf("transactions %d, agency file rows %d; want %d, %d", m.Transactions, rows, bigAgencies, 2*bigAgencies)
		}
		e.checkSink()
		verifyClean := func() {
			t.Helper()
			checks, err := e.job("V").Verify(context.Background(), job.VerifyOptions{From: at(0, 0), To: at(1, 0), Now: at(3, 0)})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if c.Differs {
					t.Errorf("verify %s: %s %v", c.Period.Name(), c.Status, c.Problems)
				}
			}
		}
		verifyClean()

		// A backfill rebuilds the same objects: the revision stands.
		res = e.run(e.job("A"), job.RunOptions{Now: at(1, 10), Backfill: true, From: at(0, 0), To: at(1, 0)})
		if res.Periods[0].Outcome != job.OutcomeUnchanged {
			t.Errorf("backfill of an unchanged big period: %s, want %s", res.Periods[0].Outcome, job.OutcomeUnchanged)
		}

		// A late item for one agency: the recheck restates the period.
		e.put(purchase("late", "agency-00007", 500, at(0, 59)))
		res = e.run(e.job("A"), job.RunOptions{Now: at(2, 5)})
		if len(res.Rechecks) != 1 || !res.Rechecks[0].Restated() {
			t.Fatalf("recheck: %+v, want the period restated", res.Rechecks)
		}
		m2 := e.manifest(hour(0))
		// + the adjustments Parquet and the agency's adjustments CSV.
		if m2.Revision != 2 || m2.Transactions != bigAgencies+1 || len(m2.Files) != 2*bigAgencies+4 {
			t.Errorf("revision %d, transactions %d, %d objects; want 2, %d, %d", m2.Revision, m2.Transactions, len(m2.Files), bigAgencies+1, 2*bigAgencies+4)
		}
		e.checkSink()
		verifyClean()
	}
	t.Run("embedded", func(t *testing.T) { run(t, embeddedStack) })
	// On DynamoDB Local + versitygw the same period takes minutes more
	// (40,000 PUTs over HTTPS on 2 cores): in the long mode only.
	if os.Getenv("RJTEST_LONG") == "1" {
		t.Run("dynamodb", func(t *testing.T) { run(t, stack{openDynamoDB, openS3}) })
	}
}

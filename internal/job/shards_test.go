package job_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
)

// purchaseSharded is purchase written by a producer with keys.shards
// shards.
func purchaseSharded(id, agency string, cents int64, at time.Time, shards int) item.Item {
	tx := item.Transaction{ID: id, AgencyID: agency, Kind: item.Purchase, Currency: money.Currency{Code: "USD", Digits: 2},
		Amount: cents, RecordedAt: at}
	tx.PK, tx.SK = keys.ForTransaction(id, at, shards)
	return tx.Item()
}

// TestShardsChange: keys.shards 1 -> 4 -> 2 between runs, the producer
// following each change. Rechecks and verify (with and without --repair)
// compare items by content, not by the partitions they were read from: no
// period is restated, none differs, and every transaction is billed once
// (a period delivered with 4 shards is still read from all 4 after the
// change to 2).
func TestShardsChange(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		var items int64
		put := func(h, shards int) {
			for i := range 12 {
				e.put(purchaseSharded(fmt.Sprintf("tx-%d-%d", h, i), fmt.Sprintf("a-%d", i%3), 1000+int64(i), at(h, i*4), shards))
				items++
			}
		}
		runWith := func(shards int, now time.Time) job.Result {
			t.Helper()
			j := e.job(fmt.Sprintf("run-%d", shards))
			j.Shards = shards
			res := e.run(j, job.RunOptions{Now: now})
			for _, pr := range append(res.Periods, res.Rechecks...) {
				if pr.Restated() {
					t.Errorf("shards %d at %s: %s %s restated as revision %d", shards, now.Format("15:04"), pr.Kind,
						pr.Period.Name(), pr.Manifest.Revision)
				}
			}
			return res
		}
		verify := func(shards int, to time.Time, repair bool) {
			t.Helper()
			j := e.job("verify")
			j.Shards = shards
			checks, err := j.Verify(context.Background(), job.VerifyOptions{From: at(0, 0), To: to, Repair: repair, Now: to.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if c.Differs || c.Status != job.VerifyOK || c.Repaired != "" {
					t.Errorf("verify with %d shards (repair %v): %s %s %q", shards, repair, c.Period.Name(), c.Status, c.Repaired)
				}
			}
		}

		put(0, 1)
		put(1, 1)
		runWith(1, at(2, 2)) // 00:00, 01:00
		put(2, 4)
		if res := runWith(4, at(3, 2)); len(res.Rechecks) != 1 { // 02:00; 01:00 rechecked
			t.Fatalf("shards 4: %d rechecks", len(res.Rechecks))
		}
		verify(4, at(3, 0), false)
		put(3, 2)
		if res := runWith(2, at(4, 2)); len(res.Rechecks) != 1 { // 03:00; 02:00 (4 shards) rechecked
			t.Fatalf("shards 2: %d rechecks", len(res.Rechecks))
		}
		verify(2, at(4, 0), false)
		verify(2, at(4, 0), true)
		verify(1, at(4, 0), false)

		var billed int64
		for h := range 4 {
			m := e.manifest(hour(h))
			if m.Revision != 1 || m.Transactions != 12 {
				t.Errorf("%s: revision %d, %d transactions", hour(h).Name(), m.Revision, m.Transactions)
			}
			billed += m.Transactions
		}
		if billed != items {
			t.Errorf("billed %d transactions, wrote %d", billed, items)
		}
		e.checkSink()
	})
}

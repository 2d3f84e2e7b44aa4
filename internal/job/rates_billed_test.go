package job_test

import (
	"fmt"
	"testing"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/pricing"
)

// TestRateChangeBilledByTransaction: after commission.default_bps 1000 ->
// 900, a restatement keeps each transaction the current revision billed at
// its billed rate and prices each transaction new to the period at today's
// rate, transaction by transaction: billed and late transaction ids
// interleave, over two agencies, with more of them than the sort budget
// holds (the billed rates are merged with the transactions in id order),
// and a billed transaction whose amount was corrected keeps its rate.
func TestRateChangeBilledByTransaction(t *testing.T) {
	e := newEnv(t, embeddedStack)
	const n = 120
	agency := func(i int) string { return fmt.Sprintf("a-%d", i%2) }
	for i := 0; i < n; i += 2 {
		e.put(purchase(fmt.Sprintf("tx-%03d", i), agency(i), 1000, at(10, i%60)))
	}
	j := e.job("A")
	j.Start = at(10, 0)
	e.run(j, job.RunOptions{Now: at(11, 2)})

	for i := 1; i < n; i += 2 {
		e.put(purchase(fmt.Sprintf("tx-%03d", i), agency(i), 1000, at(10, i%60)))
	}
	e.put(purchase("tx-000", agency(0), 2000, at(10, 0))) // corrected amount
	j = e.job("B")
	j.Start, j.Rates = at(10, 0), pricing.Flat(900)
	res := e.run(j, job.RunOptions{Now: at(12, 2)})
	if len(res.Rechecks) != 1 || !res.Rechecks[0].Restated() {
		t.Fatalf("recheck %+v", res.Rechecks)
	}
	got := map[string]string{}
	for _, a := range []string{"a-0", "a-1"} {
		for _, li := range e.agencyCSV(a, "transactions", hour(10)) {
			got[li[0]] = li[8]
		}
	}
	for i := range n {
		id, want := fmt.Sprintf("tx-%03d", i), "1000"
		if i%2 == 1 {
			want = "900"
		}
		if got[id] != want {
			t.Errorf("%s billed at %q bps, want %s", id, got[id], want)
		}
	}
	if len(got) != n {
		t.Errorf("%d line items, want %d", len(got), n)
	}
	// a-0 (even ids: billed, tx-000 corrected from 10.00 to 20.00 at 1000
	// bps) gains +1.00; a-1 (odd ids: 60 new at 900 bps on 10.00) +54.00.
	for a, want := range map[string]string{"a-0": "1.00", "a-1": "54.00"} {
		if got := commissionOf(t, e.agencyCSV(a, "adjustments", hour(10))); got != want {
			t.Errorf("%s adjustment commission %s, want %s", a, got, want)
		}
	}
	e.checkSink()
}

// TestRateChangeWithoutLineItems: a revision published without line items
// (report.line_items false) holds no per-transaction rates, so a rebuild
// of its period prices every transaction with the table its manifest
// records (one table per period), the late one included; once a revision
// has line items again, a later late item is priced at today's rate.
func TestRateChangeWithoutLineItems(t *testing.T) {
	e := newEnv(t, embeddedStack)
	jobAt := func(owner string, bps int32, lineItems bool) *job.Job {
		j := e.job(owner)
		j.Start, j.Rates, j.LineItems = at(10, 0), pricing.Flat(bps), lineItems
		return j
	}
	e.put(purchase("tx-1", "acme", 10000, at(10, 5)))
	e.run(jobAt("A", 1000, false), job.RunOptions{Now: at(11, 2)})

	e.put(purchase("tx-late", "acme", 3500, at(10, 40)))
	e.run(jobAt("B", 900, false), job.RunOptions{Now: at(12, 2)}) // recheck of 10:00
	if got := commissionOf(t, e.agencyCSV("acme", "adjustments", hour(10))); got != "3.50" {
		t.Errorf("revision 2 adjustment commission %s, want 3.50 (the recorded 1000 bps)", got)
	}
	if m := e.manifest(hour(10)); m.Revision != 2 || m.Rates == nil || !m.Rates.Equal(pricing.Flat(1000)) {
		t.Errorf("revision 2: revision %d, rates %+v, want 1000 bps", m.Revision, m.Rates)
	}

	// Line items on again: the revision being rebuilt has none, so the
	// recorded table still prices everything.
	e.put(purchase("tx-late2", "acme", 2000, at(10, 50)))
	checks, err := jobAt("C", 900, true).Verify(t.Context(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Now: at(13, 0), Repair: true})
	if err != nil || len(checks) != 1 || checks[0].Repaired != "restated as revision 3" {
		t.Fatalf("verify --repair: %+v, %v", checks, err)
	}
	if got := commissionOf(t, e.agencyCSV("acme", "adjustments", hour(10))); got != "2.00" {
		t.Errorf("revision 3 adjustment commission %s, want 2.00 (the recorded 1000 bps)", got)
	}
	for _, li := range e.agencyCSV("acme", "transactions", hour(10)) {
		if li[8] != "1000" {
			t.Errorf("revision 3: %s billed at %s bps, want 1000", li[0], li[8])
		}
	}

	// Revision 3 has line items: a late item is priced at today's rate.
	e.put(purchase("tx-late3", "acme", 1000, at(10, 55)))
	checks, err = jobAt("D", 900, true).Verify(t.Context(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Now: at(13, 0), Repair: true})
	if err != nil || len(checks) != 1 || checks[0].Repaired != "restated as revision 4" {
		t.Fatalf("verify --repair: %+v, %v", checks, err)
	}
	if got := commissionOf(t, e.agencyCSV("acme", "adjustments", hour(10))); got != "0.90" {
		t.Errorf("revision 4 adjustment commission %s, want 0.90 (900 bps)", got)
	}
	e.checkSink()
}

// TestRateChangeRepairLostLineItems: verify --repair of a revision whose
// transactions Parquet is lost cannot read the rates it billed: it prices
// with the table the manifest records (a warning says so), which restores
// the lost object of a period billed with one table, after a rate change
// too.
func TestRateChangeRepairLostLineItems(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("tx-1", "acme", 10000, at(10, 5)))
	j := e.job("A")
	j.Start = at(10, 0)
	e.run(j, job.RunOptions{Now: at(11, 2)})
	lost := e.keysUnder("transactions/period=" + hour(10).Name() + "/")
	if len(lost) != 1 {
		t.Fatalf("transactions files %q", lost)
	}
	e.remove(lost[0])

	j = e.job("B")
	j.Start, j.Rates = at(10, 0), pricing.Flat(900)
	checks, err := j.Verify(t.Context(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Now: at(11, 30), Repair: true})
	if err != nil || len(checks) != 1 || checks[0].Repaired != "restored 1 object(s) of revision 1" {
		t.Fatalf("verify --repair: %+v, %v", checks, err)
	}
	if got := e.keysUnder("transactions/period=" + hour(10).Name() + "/"); len(got) != 1 || got[0] != lost[0] {
		t.Errorf("restored %q, want %q", got, lost[0])
	}
	e.checkSink()
}

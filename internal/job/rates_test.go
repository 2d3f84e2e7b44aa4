package job_test

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
)

// agencyCSV returns the rows (header dropped) of agency's CSV of dataset
// ("summary", "adjustments", "transactions") in period p.
func (e *env) agencyCSV(agency, dataset string, p report.Period) [][]string {
	e.t.Helper()
	keys := e.keysUnder("agencies/agency=" + agency + "/period=" + p.Name() + "/" + dataset + "-")
	if len(keys) != 1 {
		e.t.Fatalf("%s %s of %s: %q", agency, dataset, p.Name(), keys)
	}
	recs, err := csv.NewReader(strings.NewReader(e.read(keys[0]))).ReadAll()
	if err != nil {
		e.t.Fatal(err)
	}
	return recs[1:]
}

// commissionOf returns the commission cell of the single row of an
// agency's summary or adjustments CSV.
func commissionOf(t *testing.T, rows [][]string) string {
	t.Helper()
	if len(rows) != 1 {
		t.Fatalf("rows %q", rows)
	}
	return rows[0][9] // period_start, period_end, agency, currency, 2 counts, gross, refunds, net, commission
}

// TestRateChangeKeepsBilledPrices is issue 15 point 7: tx-1 billed
// 100.00 at 1000 bps (10.00); commission.default_bps then set to 900; a
// late item of 35.00 lands in the same hour. The recheck restates the
// period: tx-1 keeps the rate it was billed at (its line item in the
// revision's transactions Parquet), the late item, never billed, is priced
// at today's 900 bps, so the adjustment is exactly the late item's
// commission at the new rate (+3.15), and the manifest records the table
// it priced new transactions with. verify --repair and a backfill then
// change nothing;
// verify --repair --reprice re-prices on purpose (a new revision whose
// reason says so: 135.00 at 900 bps = 12.15, an adjustment of -1.00), and
// a second verify is clean. A period billed for the first time after the
// change is priced at 900.
func TestRateChangeKeepsBilledPrices(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		e.put(purchase("tx-1", "acme", 10000, at(10, 5)))
		jobAt := func(owner string, bps int32) *job.Job {
			j := e.job(owner)
			j.Start = at(10, 0)
			j.Rates = pricing.Flat(bps)
			return j
		}
		e.run(jobAt("A", 1000), job.RunOptions{Now: at(11, 2)})
		if got := commissionOf(t, e.agencyCSV("acme", "summary", hour(10))); got != "10.00" {
			t.Fatalf("revision 1 commission %s, want 10.00", got)
		}
		if m := e.manifest(hour(10)); m.Rates == nil || !m.Rates.Equal(pricing.Flat(1000)) {
			t.Errorf("revision 1 records rates %+v, want 1000 bps", m.Rates)
		}

		e.put(purchase("tx-late", "acme", 3500, at(10, 40)))
		e.put(purchase("tx-2", "acme", 10000, at(11, 5)))
		res := e.run(jobAt("B", 900), job.RunOptions{Now: at(12, 2)}) // 11:00 delivered, 10:00 rechecked
		if len(res.Rechecks) != 1 || !res.Rechecks[0].Restated() {
			t.Fatalf("recheck %+v", res.Rechecks)
		}
		if got := commissionOf(t, e.agencyCSV("acme", "adjustments", hour(10))); got != "3.15" {
			t.Errorf("adjustment commission %s, want 3.15 (the late item's only, at 900 bps)", got)
		}
		if got := commissionOf(t, e.agencyCSV("acme", "summary", hour(10))); got != "13.15" {
			t.Errorf("revision 2 commission %s, want 13.15", got)
		}
		wantBPS := map[string]string{"tx-1": "1000", "tx-late": "900"}
		lines := e.agencyCSV("acme", "transactions", hour(10))
		for _, li := range lines {
			if li[8] != wantBPS[li[0]] { // commission_bps
				t.Errorf("line item %s billed at %s bps, want %s", li[0], li[8], wantBPS[li[0]])
			}
		}
		if len(lines) != len(wantBPS) {
			t.Errorf("revision 2 line items %q", lines)
		}
		if m := e.manifest(hour(10)); m.Revision != 2 || m.Rates == nil || !m.Rates.Equal(pricing.Flat(900)) {
			t.Errorf("revision 2: revision %d, rates %+v, want 900 bps (what it priced new transactions with)", m.Revision, m.Rates)
		}
		if got := commissionOf(t, e.agencyCSV("acme", "summary", hour(11))); got != "9.00" {
			t.Errorf("11:00 (first billed at 900) commission %s, want 9.00", got)
		}

		verify := func(o job.VerifyOptions) []job.PeriodCheck {
			t.Helper()
			o.From, o.To, o.Now = at(10, 0), at(12, 0), at(13, 0)
			checks, err := jobAt("V", 900).Verify(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			return checks
		}
		for _, c := range verify(job.VerifyOptions{Repair: true}) {
			if c.Differs || c.Repaired != "" {
				t.Errorf("verify --repair after the rate change: %s %s %q", c.Period.Name(), c.Status, c.Repaired)
			}
		}
		if m := e.manifest(hour(10)); m.Revision != 2 {
			t.Errorf("verify --repair re-priced: revision %d", m.Revision)
		}
		// A backfill rebuilds both periods under today's 900 bps: each
		// transaction at its billed rate reproduces the same objects, so
		// nothing is published.
		for _, pr := range e.run(jobAt("F", 900), job.RunOptions{Now: at(13, 0), Backfill: true, From: at(10, 0), To: at(12, 0)}).Periods {
			if pr.Outcome != job.OutcomeUnchanged {
				t.Errorf("backfill of %s after the rate change: %s revision %d", pr.Period.Name(), pr.Outcome, pr.Manifest.Revision)
			}
		}

		checks := verify(job.VerifyOptions{Repair: true, Reprice: true})
		if len(checks) != 2 || checks[0].Repaired != "repriced as revision 3" || checks[0].Differs ||
			checks[1].Repaired != "" || checks[1].Differs {
			t.Errorf("verify --repair --reprice: %+v", checks)
		}
		m := e.manifest(hour(10))
		if m.Revision != 3 || m.Reason != report.ReasonReprice || !m.Rates.Equal(pricing.Flat(900)) {
			t.Errorf("repriced manifest: revision %d reason %q rates %+v", m.Revision, m.Reason, m.Rates)
		}
		if got := commissionOf(t, e.agencyCSV("acme", "adjustments", hour(10))); got != "-1.00" {
			t.Errorf("reprice adjustment commission %s, want -1.00", got)
		}
		if got := commissionOf(t, e.agencyCSV("acme", "summary", hour(10))); got != "12.15" {
			t.Errorf("repriced commission %s, want 12.15", got)
		}
		for _, c := range verify(job.VerifyOptions{}) {
			if c.Differs || c.Status != job.VerifyOK {
				t.Errorf("verify after reprice: %s %s", c.Period.Name(), c.Status)
			}
		}
		e.checkSink()
	})
}

// TestDatedRates: a default rate with a from date splits one period's
// transactions by recorded_at, and the rebuild after a late item (with
// today's configuration back to one flat rate) keeps that split; the late
// item, never billed, is priced with today's flat rate.
func TestDatedRates(t *testing.T) {
	e := newEnv(t, embeddedStack)
	dated := pricing.Table{
		Default:  pricing.Schedule{{BPS: 1000}, {BPS: 500, From: at(10, 30)}},
		Agencies: map[string]pricing.Schedule{"vip": {{BPS: 200, From: at(10, 45)}}},
	}
	e.put(purchase("before", "acme", 10000, at(10, 29)), purchase("from", "acme", 10000, at(10, 30)),
		purchase("vip-before", "vip", 10000, at(10, 44)), purchase("vip-from", "vip", 10000, at(10, 45)))
	j := e.job("A")
	j.Start, j.Rates = at(10, 0), dated
	e.run(j, job.RunOptions{Now: at(11, 2)})
	bps := func() map[string]string {
		out := map[string]string{}
		for _, a := range []string{"acme", "vip"} {
			for _, li := range e.agencyCSV(a, "transactions", hour(10)) {
				out[li[0]] = li[8]
			}
		}
		return out
	}
	want := map[string]string{"before": "1000", "from": "500", "vip-before": "500", "vip-from": "200"}
	for id, w := range want {
		if got := bps()[id]; got != w {
			t.Errorf("%s billed at %s bps, want %s", id, got, w)
		}
	}
	e.put(purchase("late", "acme", 10000, at(10, 59)))
	j = e.job("B")
	j.Start, j.Rates = at(10, 0), pricing.Flat(1000)
	e.run(j, job.RunOptions{Now: at(12, 2)})
	want["late"] = "1000"
	got := bps()
	for id, w := range want {
		if got[id] != w {
			t.Errorf("after the restatement: %s billed at %s bps, want %s", id, got[id], w)
		}
	}
	if got := commissionOf(t, e.agencyCSV("acme", "adjustments", hour(10))); got != "10.00" {
		t.Errorf("adjustment commission %s, want 10.00", got)
	}
}

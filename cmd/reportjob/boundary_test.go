package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// The boundaries suite runs the CLI with --now on the exact millisecond
// where periods and rechecks become due, with items on the first and last
// millisecond of periods across midnight, the leap day of 2024 and the
// dedupe window's edge, and reads back which period billed each item.

func bTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// bTx is a valid USD purchase of id recorded at at.
func bTx(id, at, amount string) item.Transaction {
	t := bTime(at)
	usd := money.Currency{Code: "USD", Digits: 2}
	v, err := money.ParseAmount(amount, usd)
	if err != nil {
		panic(err)
	}
	pk, sk := keys.ForTransaction(id, t, 1)
	return item.Transaction{PK: pk, SK: sk, ID: id, AgencyID: "acme", Kind: item.Purchase, Currency: usd, Amount: v, RecordedAt: t}
}

// putTx stores the canonical items of txs in the embedded table.
func (h *harness) putTx(txs ...item.Transaction) {
	h.t.Helper()
	items := make([]item.Item, len(txs))
	for i, tx := range txs {
		items[i] = tx.Item()
	}
	h.withStore(func(st *store) {
		if err := st.PutItems(context.Background(), items); err != nil {
			h.t.Fatal(err)
		}
	})
}

// billedIn returns, for each transaction id in the line items, the names
// of the periods whose transactions file lists it.
func billedIn(t *testing.T, h *harness) map[string][]string {
	t.Helper()
	sk := h.sink()
	out := map[string][]string{}
	for _, key := range datasetKeys(h.objects(), report.DatasetTransactions) {
		period := strings.TrimPrefix(strings.Split(key, "/")[1], "period=")
		for _, r := range readParquet[lineRec](t, key, h.read(sk, key)) {
			out[r.TransactionID] = append(out[r.TransactionID], period)
		}
	}
	return out
}

// checkBilledOnce checks that each transaction id of want is billed
// exactly once, in the period want names, and that nothing else is.
func checkBilledOnce(t *testing.T, h *harness, want map[string]string) {
	t.Helper()
	got := billedIn(t, h)
	for id, period := range want {
		if ps := got[id]; len(ps) != 1 || ps[0] != period {
			t.Errorf("%s billed in %v, want once, in %s", id, ps, period)
		}
	}
	for id, ps := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s billed in %v, want nowhere", id, ps)
		}
	}
}

// manifestOf reads the manifest of the period starting at start.
func manifestOf(t *testing.T, h *harness, start string) *report.Manifest {
	t.Helper()
	p := report.PeriodAt(bTime(start), time.Hour)
	m, err := report.ParseManifest(h.read(h.sink(), report.ManifestKey(p)))
	if err != nil {
		t.Fatalf("manifest of %s: %v", p, err)
	}
	return m
}

// runAt runs `run --now now` and checks the summary's status and counts.
func runAt(t *testing.T, h *harness, now, status string, periods, rechecks, restated int) map[string]any {
	t.Helper()
	sum := h.mustRun(exitOK, "run", "--now", now)
	if sum["status"] != status || sum["periods_processed"] != float64(periods) || sum["rechecks"] != float64(rechecks) || sum["restated"] != float64(restated) {
		t.Fatalf("run --now %s: %v\nwant status %s, %d periods, %d rechecks, %d restated", now, sum, status, periods, rechecks, restated)
	}
	return sum
}

// TestBoundaryLeapDay: hourly periods from 2024-02-28T22:00Z, lateness 2m,
// recheck after 1h. Items on the first and last millisecond of periods
// across midnight into and out of 29 February; runs 1 ms before and at
// each watermark.
func TestBoundaryLeapDay(t *testing.T) {
	h := newHarness(t, harnessOptions{start: "2024-02-28T22:00:00Z"})
	h.mustRun(exitOK, "init")
	h.putTx(
		bTx("a-first-ms", "2024-02-28T22:00:00Z", "1.00"),
		bTx("b-last-ms", "2024-02-28T22:59:59.999Z", "2.00"),
		bTx("c-first-ms", "2024-02-28T23:00:00Z", "3.00"),
		bTx("d-before-midnight", "2024-02-28T23:59:59.999Z", "4.00"),
		bTx("e-leap-midnight", "2024-02-29T00:00:00Z", "5.00"),
		bTx("f-leap-last-ms", "2024-02-29T23:59:59.999Z", "6.00"),
		bTx("g-march", "2024-03-01T00:00:00Z", "7.00"),
	)
	runAt(t, h, "2024-02-28T23:01:59.999Z", "nothing_due", 0, 0, 0) // 1 ms before 23:00 + 2m
	runAt(t, h, "2024-02-28T23:02:00Z", "ok", 1, 0, 0)              // the watermark of [22:00, 23:00)
	if m := manifestOf(t, h, "2024-02-28T22:00:00Z"); m.Transactions != 2 || m.Revision != 1 {
		t.Fatalf("22:00: %d transactions, revision %d", m.Transactions, m.Revision)
	}

	// A late item in the delivered period: the 1h recheck finds it at
	// end+1h = midnight exactly, not a millisecond before.
	h.putTx(bTx("h-late", "2024-02-28T22:30:00Z", "8.00"))
	runAt(t, h, "2024-02-28T23:59:59.999Z", "nothing_due", 0, 0, 0)
	runAt(t, h, "2024-02-29", "ok", 0, 1, 1) // --now as a date: midnight UTC
	if m := manifestOf(t, h, "2024-02-28T22:00:00Z"); m.Transactions != 3 || m.Revision != 2 || m.Reason != report.ReasonRecheck {
		t.Fatalf("22:00 after the recheck: %d transactions, revision %d (%s)", m.Transactions, m.Revision, m.Reason)
	}
	runAt(t, h, "2024-02-29T00:01:59.999Z", "nothing_due", 0, 0, 0)
	runAt(t, h, "2024-02-29T00:02:00Z", "ok", 1, 0, 0)
	// The whole leap day, 24 periods, at the watermark of its last one;
	// the recheck of [23:00, 00:00) on 28 February is due too.
	runAt(t, h, "2024-03-01T00:01:59.999Z", "ok", 23, 1, 0)
	runAt(t, h, "2024-03-01T00:02:00Z", "ok", 1, 0, 0)

	want := map[string]string{
		"a-first-ms": "20240228T2200Z", "b-last-ms": "20240228T2200Z", "h-late": "20240228T2200Z",
		"c-first-ms": "20240228T2300Z", "d-before-midnight": "20240228T2300Z",
		"e-leap-midnight": "20240229T0000Z", "f-leap-last-ms": "20240229T2300Z",
	}
	checkBilledOnce(t, h, want) // g-march is not due
	if n := len(periodManifestKeys(h.objects())); n != 26 {
		t.Errorf("%d manifests, want 26 (22:00 and 23:00 on the 28th, 24 on the 29th)", n)
	}
	// February's statement (statements.timezone UTC) ends with the leap
	// day and is built from the same 26 periods; March has none yet.
	months := checkStatements(h)
	feb := months[report.MonthManifestKey("2024-02")]
	if len(months) != 1 || feb == nil || feb.manifest.Status != "draft" || len(feb.manifest.Periods) != 26 ||
		!feb.manifest.MonthStart.Equal(bTime("2024-02-01T00:00:00Z")) || !feb.manifest.MonthEnd.Equal(bTime("2024-03-01T00:00:00Z")) ||
		feb.manifest.Booked(bTime("2024-02-28T22:00:00Z")) != 2 {
		t.Errorf("statements %v, want February's draft [2024-02-01, 2024-03-01) of 26 periods, 22:00 at revision 2", months)
	}
	st := h.mustRun(exitOK, "status", "--json", "--now", "2024-03-01T00:02:00Z")
	if st["checkpoint"] != "2024-03-01T00:00:00Z" || st["periods_behind"] != float64(0) {
		t.Errorf("status: %v", st)
	}
	// --now must be a real instant: no 29 February in 2023, no hour 24.
	for _, bad := range []string{"2023-02-29", "2024-02-29T24:00:00Z", "2024-02-30T00:00:00Z"} {
		out, errs, code := h.run("run", "--now", bad)
		if code != exitUsage || !strings.Contains(out+errs, bad) {
			t.Errorf("run --now %s: exit %d, want %d naming the value\n%s%s", bad, code, exitUsage, out, errs)
		}
	}
}

// TestBoundaryDedupeWindow: with a 2h window, a transaction billed in
// [00:00, 01:00) is recognised by every period starting before
// 01:00 + 2h: a retry at 02:59:59.999 is dropped (identical) or rejected
// (different), one at 03:00:00.000 is outside the window and billed again.
func TestBoundaryDedupeWindow(t *testing.T) {
	h := newHarness(t, harnessOptions{extra: "  dedupe_window: 2h\n  recheck_after: []"})
	h.mustRun(exitOK, "init")
	h.putTx(
		bTx("same", "2024-03-01T00:10:00Z", "1.00"),
		bTx("same", "2024-03-01T02:59:59.999Z", "1.00"),
		bTx("same", "2024-03-01T03:00:00Z", "1.00"),
		bTx("changed", "2024-03-01T00:20:00Z", "1.00"),
		bTx("changed", "2024-03-01T02:59:59.999Z", "9.99"),
		bTx("changed", "2024-03-01T03:00:00Z", "9.99"),
	)
	runAt(t, h, "2024-03-01T04:01:59.999Z", "ok", 3, 0, 0)
	runAt(t, h, "2024-03-01T04:02:00Z", "ok", 1, 0, 0)
	for _, tt := range []struct {
		start                      string
		billed, dupsAcross, reject int64
	}{
		{"2024-03-01T00:00:00Z", 2, 0, 0},
		{"2024-03-01T01:00:00Z", 0, 0, 0},
		{"2024-03-01T02:00:00Z", 0, 1, 1}, // within the window
		{"2024-03-01T03:00:00Z", 2, 0, 0}, // exactly one window after 01:00: outside
	} {
		m := manifestOf(t, h, tt.start)
		if m.Transactions != tt.billed || m.DuplicatesAcrossPeriods != tt.dupsAcross || m.Rejects != tt.reject {
			t.Errorf("%s: %d billed, %d duplicates across periods, %d rejects; want %d, %d, %d",
				tt.start, m.Transactions, m.DuplicatesAcrossPeriods, m.Rejects, tt.billed, tt.dupsAcross, tt.reject)
		}
	}
	got := billedIn(t, h)
	for _, id := range []string{"same", "changed"} {
		if strings.Join(got[id], " ") != "20240301T0000Z 20240301T0300Z" {
			t.Errorf("%s billed in %v, want 20240301T0000Z and 20240301T0300Z", id, got[id])
		}
	}
	rej := datasetKeys(h.objects(), report.DatasetRejects)
	if len(rej) != 1 || !strings.Contains(string(h.read(h.sink(), rej[0])), "already billed in period 20240301T0000Z with different content") {
		t.Errorf("rejects %q: want one, naming the period that billed it", rej)
	}
}

//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// A rebuild from unchanged items bills what the revision it replaces
// billed (SPEC section 3). When a decision of that revision cannot be read
// back and the index no longer holds it, the revision is kept rather than
// replaced by one that the index decided (review of issue 31).

// TestRepairLostDuplicatesAfterExpiry: 08-03 dropped an identical copy of
// ord-x and rejected a copy of ord-y that 08-01 billed; the claims of 08-01
// are swept; 08-03's duplicates object is lost. verify --repair cannot
// make it again (nothing holds those decisions any more): it says so
// (exit 4, not repairable) and 08-03 keeps revision 1, gross 7.00. Before,
// it restated 08-03 with ord-x and ord-y billed again (gross 158.00).
func TestRepairLostDuplicatesAfterExpiry(t *testing.T) {
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-08-01", extra: "  dedupe_window: 10d\n  max_periods_per_run: 200"})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-08-05T00:00:00Z",
		stTx{id: "ord-x", agency: "acme", amount: "100.00", currency: "USD", at: "2026-08-01T10:00:00Z"},
		stTx{id: "ord-y", agency: "acme", amount: "50.00", currency: "USD", at: "2026-08-01T11:00:00Z"},
		stTx{id: "ord-x", agency: "acme", amount: "100.00", currency: "USD", at: "2026-08-03T10:00:00Z"},
		stTx{id: "ord-y", agency: "acme", amount: "51.00", currency: "USD", at: "2026-08-03T11:00:00Z"},
		stTx{id: "ord-z", agency: "acme", amount: "7.00", currency: "USD", at: "2026-08-03T12:00:00Z"})
	r.run("2026-08-05T00:05:00Z", map[string]any{"periods_processed": float64(4)})
	// The claims of 08-01 expire 35 days after the run that wrote them;
	// the embedded store sweeps them as later periods are built.
	r.run("2026-10-20T00:05:00Z", nil)
	rkWaitClaimsGone(t, h, "ord-x", "ord-y")

	p := report.Period{Start: time.Date(2026, 8, 3, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 8, 4, 0, 0, 0, 0, time.UTC)}
	rev1 := rkManifest(t, h, p)
	dup := rkDuplicatesKey(rev1)
	if dup == "" {
		t.Fatalf("08-03 revision 1 has no duplicates object: %+v", rev1.Files)
	}
	if err := os.Remove(filepath.Join(h.dir, "reports", filepath.FromSlash(dup))); err != nil {
		t.Fatal(err)
	}
	sum, out := r.cli(4, "verify", "--repair", "--from", "2026-08-03", "--to", "2026-08-04", "--now", "2026-10-20T00:10:00Z")
	if sum["not_repairable"] != float64(1) || !strings.Contains(out, "NOT repairable") || !strings.Contains(out, "could not be read back") {
		t.Errorf("verify --repair of 08-03 without its duplicates object, the claims gone: %v\n%s", sum, out)
	}
	rev := rkManifest(t, h, p)
	if rev.Revision != 1 || rev.Transactions != 1 || len(rev.Totals) != 1 || rev.Totals[0].Gross != "7.00" {
		t.Errorf("08-03 after the repair: revision %d, %d transactions, totals %+v; want revision 1 kept: ord-z alone, gross 7.00",
			rev.Revision, rev.Transactions, rev.Totals)
	}
	// The other objects are as they were: only the lost one is reported.
	sum, out = r.cli(4, "verify", "--from", "2026-08-03", "--to", "2026-08-04", "--now", "2026-10-20T00:15:00Z")
	if sum["differ"] != float64(1) || !strings.Contains(out, "missing object "+dup) {
		t.Errorf("verify after the refused repair: %v\n%s", sum, out)
	}
}

// TestBackfillWithoutLineItemsKeepsBilling: report.line_items false, so a
// revision cannot say which transactions it billed. ord-x is billed by
// 08-01 and again by 08-21 (outside the 10-day window: the claim moves to
// 08-21). The window is raised to 30 days, then 08-01 is backfilled: the
// index now says 08-21 billed ord-x within the window, but 08-01's
// revision billed it from unchanged items, so 08-01 keeps its revision.
// Before, it was restated with ord-x dropped (0 transactions).
func TestBackfillWithoutLineItemsKeepsBilling(t *testing.T) {
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-08-01",
		extra: "  dedupe_window: 10d\n  line_items: false\n  max_periods_per_run: 200"})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-08-23T00:00:00Z",
		stTx{id: "ord-x", agency: "acme", amount: "100.00", currency: "USD", at: "2026-08-01T10:00:00Z"},
		stTx{id: "ord-x", agency: "acme", amount: "100.00", currency: "USD", at: "2026-08-21T10:00:00Z"})
	r.run("2026-08-23T00:05:00Z", map[string]any{"transactions": float64(2)})
	r.editConfig("dedupe_window: 10d", "dedupe_window: 30d")
	sum, _ := r.cli(0, "run", "--backfill", "--from", "2026-08-01", "--to", "2026-08-02", "--now", "2026-08-23T00:10:00Z")
	if sum["restated"] != float64(0) || sum["objects_written"] != float64(0) {
		t.Errorf("backfill of 08-01 after the window was raised: %v; want nothing restated, nothing written", sum)
	}
	p := report.Period{Start: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 8, 2, 0, 0, 0, 0, time.UTC)}
	if m := rkManifest(t, h, p); m.Revision != 1 || m.Transactions != 1 {
		t.Errorf("08-01 after the backfill: revision %d, %d transactions; want revision 1, ord-x billed", m.Revision, m.Transactions)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// TestE2ELateItemsAWS: on DynamoDB Local and versitygw over HTTPS, items
// written late into a delivered period by a producer that is not our
// ingest (plain SDK PutItem, random-suffix keys) are found by the recheck
// an hour after the period's end: the period is restated, its adjustments
// are exactly the late items, no object of the first revision remains, and
// a recheck of an unchanged period writes nothing. verify then agrees
// (exit 0); after an object is deleted it exits 4, --repair fixes it, and
// verify exits 0 again.
func TestE2ELateItemsAWS(t *testing.T) {
	h := newHarness(t, harnessOptions{backend: "aws", top: e2eCommissionYAML})
	h.mustRun(0, "init")
	valid := func(id, agency, amount, cur string) map[string]item.Value {
		return map[string]item.Value{"transaction_id": item.S(id), "agency_id": item.S(agency), "amount": item.N(amount), "currency": item.S(cur)}
	}
	raw := func(hh, mm, ss int, attrs map[string]item.Value) rawItem {
		at := at(hh, mm, ss)
		return rawItem{pk: keys.Quarter(at), sk: keys.SortKey(at, keys.RandomSuffix()), attrs: attrs}
	}
	h.putRawDynamoDB([]rawItem{
		raw(0, 5, 0, valid("o-1", "acme", "10.00", "USD")),
		raw(0, 50, 0, valid("o-2", "beta", "3.000", "BHD")),
		raw(1, 10, 0, valid("o-3", "acme", "1.00", "USD")),
	})
	// 01:02: 00:00 delivered on time, owing a recheck at 02:00.
	if sum := h.mustRun(0, "run", "--now", "2024-03-01T01:02:00Z"); sum["periods_processed"] != float64(1) {
		t.Fatalf("first run: %v", sum)
	}
	first := h.objects()
	// Late items into 00:00, written the way seed 001's producer writes.
	h.putRawDynamoDB([]rawItem{
		raw(0, 59, 0, valid("o-late-1", "acme", "2.50", "USD")),
		raw(0, 58, 0, valid("o-late-2", "gamma", "7", "JPY")),
	})
	sum := h.mustRun(0, "run", "--now", "2024-03-01T02:02:00Z")
	if sum["periods_processed"] != float64(1) || sum["rechecks"] != float64(1) || sum["restated"] != float64(1) || sum["late_items"] != float64(2) {
		t.Fatalf("recheck run: %v", sum)
	}
	objs := h.objects()
	var adj []string
	for k := range objs {
		if strings.Contains(k, "period=20240301T0000Z/adjustments-") && strings.HasSuffix(k, ".csv") {
			adj = append(adj, string(h.read(h.sink(), k)))
		}
	}
	all := strings.Join(adj, "")
	for _, want := range []string{"acme,USD,1,0,2.50,0.00,2.50,0.25,2", "gamma,JPY,1,0,7,0,7,1,2"} {
		if !strings.Contains(all, want) {
			t.Errorf("adjustments lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "beta") {
		t.Errorf("an unchanged agency has adjustments:\n%s", all)
	}
	// No object of revision 1 that revision 2 replaced remains.
	for k := range first {
		if strings.Contains(k, "summary/period=20240301T0000Z/") {
			if _, ok := objs[k]; ok {
				t.Errorf("revision 1's %s is still there", k)
			}
		}
	}
	checkListed(t, h, objs)
	// 03:02: 01:00's recheck finds it unchanged: nothing is written but
	// the new 02:00 and March's statement, which takes it in.
	before := h.objects()
	if sum := h.mustRun(0, "run", "--now", "2024-03-01T03:02:00Z"); sum["rechecks"] != float64(1) || sum["restated"] != float64(0) {
		t.Fatalf("03:02 run: %v", sum)
	}
	after := h.objects()
	for k, sha := range before {
		if !strings.Contains(k, "period=20240301T0200Z") && !report.IsStatementKey(k) && after[k] != sha {
			t.Errorf("an unchanged recheck changed %s", k)
		}
	}
	march := checkStatements(h)[report.MonthManifestKey("2024-03")]
	if march == nil || len(march.manifest.Periods) != 3 || march.manifest.Booked(at(0, 0, 0)) != 2 || march.manifest.Booked(at(1, 0, 0)) != 1 {
		t.Errorf("March's statement %v, want 00:00 (revision 2), 01:00 and 02:00", march)
	}
	v := h.mustRun(0, "verify", "--from", "2024-03-01", "--to", "2024-03-01T03:00:00Z", "--now", "2024-03-01T03:02:00Z")
	if v["status"] != "ok" {
		t.Fatalf("verify: %v", v)
	}
	var victim string
	for k := range after {
		if strings.HasPrefix(k, "agencies/agency=gamma/period=") {
			victim = k
		}
	}
	if err := h.sink().Delete(t.Context(), victim); err != nil {
		t.Fatal(err)
	}
	if v := h.mustRun(exitDiffers, "verify", "--from", "2024-03-01", "--to", "2024-03-01T03:00:00Z", "--now", "2024-03-01T03:02:00Z"); v["differ"] != float64(1) {
		t.Fatalf("verify after a delete: %v", v)
	}
	if v := h.mustRun(exitDiffers, "verify", "--last", "3h", "--repair", "--now", "2024-03-01T03:02:00Z"); v["repaired"] != float64(1) || v["from"] != "2024-03-01T00:00:00Z" {
		t.Fatalf("verify --repair: %v", v)
	}
	h.mustRun(0, "verify", "--from", "2024-03-01", "--to", "2024-03-01T03:00:00Z", "--now", "2024-03-01T03:02:00Z")
	if !mapsEqual(h.objects(), after) {
		t.Error("the repair did not restore the sink as it was")
	}
}

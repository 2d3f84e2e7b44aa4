package main

import (
	"context"
	"strings"
	"testing"
)

// TestVerifyRepairAdjustments drives the CLI: a restated period (revision
// 2, with adjustments) loses its adjustments Parquet. verify --repair
// rebuilds it from acme's adjustments CSV (exit 4, "repaired"; verify
// clean after). Then the Parquet and acme's CSV are both lost: verify
// --repair keeps revision 2 and every object there, and says the period is
// not repairable (exit 4, status "differs", not_repairable 1); a second
// run says the same.
func TestVerifyRepairAdjustments(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ingest := func(line string) {
		t.Helper()
		h.mustRun(0, "ingest", "--file", h.writeFile("items.jsonl", line+"\n"), "--now", "2024-03-01T02:00:00Z", "--allow-late")
	}
	ingest(`{"transaction_id":"tx-1","agency_id":"acme","amount":"100.00","currency":"USD","recorded_at":"2024-03-01T00:05:00Z"}`)
	h.mustRun(0, "run", "--now", "2024-03-01T01:02:00Z")
	ingest(`{"transaction_id":"tx-late","agency_id":"acme","amount":"35.00","currency":"USD","recorded_at":"2024-03-01T00:40:00Z"}`)
	h.mustRun(0, "run", "--now", "2024-03-01T02:02:00Z")
	key := func(sub string) string {
		t.Helper()
		for k := range h.objects() {
			if strings.Contains(k, sub) {
				return k
			}
		}
		t.Fatalf("no object with %q", sub)
		return ""
	}
	remove := func(k string) {
		t.Helper()
		if err := h.sink().Delete(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	verify := []string{"verify", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T01:00:00Z", "--now", "2024-03-01T03:00:00Z"}
	before := h.objects()

	remove(key("adjustments/period=20240301T0000Z/"))
	if sum := h.mustRun(4, append(verify, "--repair")...); sum["status"] != "repaired" {
		t.Errorf("verify --repair of the lost adjustments Parquet: %v", sum)
	}
	h.mustRun(0, verify...)
	if after := h.objects(); len(after) != len(before) {
		t.Errorf("objects: %d before, %d after the repair", len(before), len(after))
	}

	remove(key("adjustments/period=20240301T0000Z/"))
	csvKey := key("agency=acme/period=20240301T0000Z/adjustments-")
	remove(csvKey)
	for range 2 {
		out, errs, code := h.run(append(verify, "--repair")...)
		sum := lastJSON(t, out)
		if code != exitDiffers || sum["status"] != "differs" || sum["not_repairable"] != float64(1) ||
			!strings.Contains(out, "NOT repairable: not repairable: the adjustments of revision 2 cannot be read back") {
			t.Fatalf("verify --repair, nothing of the adjustments left: exit %d\n%s\n%s", code, out, errs)
		}
	}
	after := h.objects()
	for k, sha := range before {
		if strings.Contains(k, "adjustments") {
			continue
		}
		if after[k] != sha {
			t.Errorf("%s changed or went: %q -> %q", k, sha, after[k])
		}
	}
	if len(after) != len(before)-2 {
		t.Errorf("objects: %d before, %d after (want the two lost ones gone, nothing else)", len(before), len(after))
	}
}

//go:build linux

package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// TestStatementBytesIndependentOfPublication (issue 31, point 5), through
// the built binary on the embedded store: January's draft statements
// (PDF, CSV, Parquet of each agency, the statements Parquet) are kept;
// the whole sink is deleted and the same items are backfilled an hour of
// report clock later, so every period manifest has another generated_at.
// The statements must be the same objects, byte for byte (SPEC section 7:
// same content, same bytes; the audit chain names each period by a digest
// of what it holds, not of when its manifest was written).
func TestStatementBytesIndependentOfPublication(t *testing.T) {
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-01-27", extra: "  recheck_after: [1h]\n  max_periods_per_run: 200",
		top: e2eCommissionYAML + "\nstatements: {timezone: UTC, close_after: 1d, agency_files: [pdf, csv, parquet]}"})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-01-30T00:00:00Z",
		stTx{id: "s1", agency: "acme", amount: "10.00", currency: "USD", at: "2026-01-27T05:00:00Z"},
		stTx{id: "s2", agency: "beta", amount: "20.00", currency: "EUR", at: "2026-01-28T06:00:00Z"},
		stTx{id: "s3", agency: "acme", amount: "30.00", currency: "USD", at: "2026-01-29T07:00:00Z"},
	)
	r.run("2026-01-30T00:05:00Z", nil)
	statements := func() map[string]string {
		out := map[string]string{}
		for k, sum := range h.objects() {
			if report.IsStatementKey(k) && !strings.HasPrefix(k, report.MonthManifestsPrefix) {
				out[k] = sum
			}
		}
		return out
	}
	first := statements()
	if len(first) != 7 { // 2 agencies x 3 files and the statements Parquet
		t.Fatalf("January's statements: %d objects, want the agencies' files and the statements Parquet", len(first))
	}
	if err := os.RemoveAll(filepath.Join(h.dir, "reports")); err != nil {
		t.Fatal(err)
	}
	r.cli(0, "run", "--backfill", "--from", "2026-01-27T00:00:00Z", "--to", "2026-01-30T00:00:00Z", "--now", "2026-01-30T01:05:00Z")
	if again := statements(); !maps.Equal(first, again) {
		t.Errorf("the same items published again an hour later give other statement objects:\nfirst %v\nagain %v", first, again)
	}
	r.wantStatus("2026-01", "draft", 1)
	objs := h.objects()
	stCheckTotals(t, h, objs, stCheckObjects(t, h, objs), "UTC")
}

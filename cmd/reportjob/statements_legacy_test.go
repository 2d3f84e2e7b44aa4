//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// legacyFixture is a store and sink written by the binary from before the
// audit chain named periods by their content digest (commit 500282e): see
// testdata/statements-legacy/make.sh. January final, 2026-01-30 restated
// and booked in February's draft.
const legacyFixture = "testdata/statements-legacy"

// TestStatementsFromBeforeDigests (issue 31, point 5's compatibility):
// the binary of this tree on statements the binary from before wrote,
// whose month manifests name each period by its manifest's sha256. verify
// finds both months as they are (the final January and the draft February
// check against their own audit chain); January's lost PDF and statements
// Parquet are restored byte for byte (the PDF printed with its manifest
// sha256s again); the next run that changes February publishes its next
// revision with digests, and January stays byte for byte as it was.
func TestStatementsFromBeforeDigests(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(legacyFixture)); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, config: filepath.Join(dir, "config.yaml"), backend: "embedded"}
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	jan, feb := r.monthManifest("2026-01"), r.monthManifest("2026-02")
	if !jan.Final() || !jan.LegacyChain() || feb.Final() || !feb.LegacyChain() || len(feb.Adjustments) != 1 {
		t.Fatalf("fixture: January %s legacy %v, February %s legacy %v with %d adjustments; regenerate it with make.sh",
			jan.Status, jan.LegacyChain(), feb.Status, feb.LegacyChain(), len(feb.Adjustments))
	}
	verify := []string{"verify", "--from", "2026-01-28T00:00:00Z", "--to", "2026-02-02T00:00:00Z", "--now", "2026-02-03T01:00:00Z"}
	r.cli(0, verify...)
	frCheck(r, "the fixture as the old binary left it")

	before := h.objects()
	var lost []string
	for _, f := range jan.Files {
		if strings.HasSuffix(f.Key, ".pdf") && strings.Contains(f.Key, "agency=acme/") || strings.HasPrefix(f.Key, report.StatementsPrefix("2026-01")) {
			lost = append(lost, f.Key)
			if err := h.sink().Delete(context.Background(), f.Key); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(lost) != 2 {
		t.Fatalf("January's acme PDF and statements Parquet: %v", lost)
	}
	if sum, out := r.cli(exitDiffers, append(verify, "--repair")...); sum["status"] != "repaired" || strings.Contains(out, "NOT repairable") {
		t.Fatalf("verify --repair of January's lost objects: %v\n%s", sum, out)
	}
	for _, k := range lost {
		if got := h.objects()[k]; got != before[k] {
			t.Errorf("%s after the repair: sha256 %q, want %q", k, got, before[k])
		}
	}
	r.cli(0, verify...)
	frCheck(r, "January restored")

	r.run("2026-02-03T02:05:00Z", nil) // delivers 02-02: February's next revision
	feb2 := r.monthManifest("2026-02")
	if feb2.StatementRevision <= feb.StatementRevision || feb2.LegacyChain() || len(feb2.Adjustments) != 1 || feb2.Adjustments[0].Digest == "" {
		t.Errorf("February after the run: revision %d (was %d), legacy %v, adjustments %+v; want the next revision with digests,  "+
			"(the adjustment booked before them too: 01-30 still holds its revision 2)", feb2.StatementRevision, feb.StatementRevision, feb2.LegacyChain(), feb2.Adjustments)
	}
	r.cli(0, "verify", "--from", "2026-01-28T00:00:00Z", "--to", "2026-02-03T00:00:00Z", "--now", "2026-02-03T03:00:00Z")
	frCheck(r, "February's next revision")
}

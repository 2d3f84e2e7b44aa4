package dedupeindex

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

var writeLegacy = flag.Bool("write-legacy-fixture", false,
	"write testdata/bucket-layout.db and .json with this code (it was run at commit d6c935c, the by-id bucket layout)")

// The legacy fixture: a store of job "job" written by the by-id bucket
// layout, and what its index answered.
var (
	fixStart = time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
	fixP     = []time.Time{fixStart, fixStart.Add(time.Hour), fixStart.Add(2 * time.Hour), fixStart.Add(50 * 24 * time.Hour)}
	fixExp   = func(p time.Time) time.Time { return p.Add(time.Hour + collect.RetentionFloor) }
	fixNow   = fixStart.Add(60 * 24 * time.Hour)
	fixIDs   = []string{"a", "b", "c", "d", "e", "f", "g", "h", "moved", "x-00", "x-01", "x-02", "x-03", "x-04", "x-05", "x-06", "x-07", "x-08", "x-09"}
)

// fixture is what the fixture's index answers: the claims of fixIDs and
// each period's list.
type fixture struct {
	Claims []collect.Claim     `json:"claims"`
	Lists  map[string][]string `json:"lists"`
}

func readFixture(t *testing.T, ix *Index) fixture {
	t.Helper()
	claims, err := ix.Lookup(t.Context(), "job", fixIDs)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(claims, func(a, b collect.Claim) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	f := fixture{Claims: claims, Lists: map[string][]string{}}
	for _, p := range fixP {
		f.Lists[p.Format(time.RFC3339)] = ixList(t, ix, "job", p)
	}
	return f
}

// TestWriteLegacyFixture writes the fixture (only with
// -write-legacy-fixture): periods 0 to 2 hourly, period 3 fifty days
// later, with ids written, listed only, released, moved to a later period
// outside the window, and left by a writer that never committed.
func TestWriteLegacyFixture(t *testing.T) {
	if !*writeLegacy {
		t.Skip("without -write-legacy-fixture")
	}
	ixSmallBatches(t, 3, 1000)
	path := filepath.Join("testdata", "bucket-layout.db")
	_ = os.Remove(path)
	ix := openIndex(t, path)
	commit := func(p time.Time, write bool, ids ...string) {
		ixCommit(t, ix, "job", p, fixExp(p), fixStart, write, ids...)
	}
	commit(fixP[0], true, "a", "b", "c", "moved")
	commit(fixP[1], true, "d", "e")
	// p0 rebuilt: b gone (released), c listed only, a rewritten.
	w, err := ix.NewClaimWriter(t.Context(), "job", hourOf(fixP[0]), fixExp(fixP[0]), fixStart)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Add("a", indextest.FP("a", 1), true))
	must(w.Add("c", indextest.FP("c", 0), false))
	must(w.Add("moved", indextest.FP("moved", 0), false))
	must(w.Release("b"))
	must(w.Commit())
	// p3, outside the window of p0: "moved" moves there.
	commit(fixP[3], true, "f", "moved")
	// p2: g committed; then a writer that fails after storing x-00...
	commit(fixP[2], true, "g")
	w, err = ix.NewClaimWriter(t.Context(), "job", hourOf(fixP[2]), fixExp(fixP[2]), fixStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range fixIDs[9:] {
		must(w.Add(id, indextest.FP(id, 0), true))
	}
	w.Abort()
	f := readFixture(t, ix)
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	must(os.WriteFile(filepath.Join("testdata", "bucket-layout.json"), append(b, '\n'), 0o644))
}

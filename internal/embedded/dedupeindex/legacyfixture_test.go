package dedupeindex

import (
	"encoding/json"
	"flag"
	bolt "go.etcd.io/bbolt"
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

// openFixture opens a copy of the legacy fixture.
func openFixture(t *testing.T) (*Index, fixture) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := os.ReadFile(filepath.Join("testdata", "bucket-layout.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var want fixture
	j, err := os.ReadFile(filepath.Join("testdata", "bucket-layout.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &want); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, path)
	migrateFixture(t, ix)
	return ix, want
}

// migrateFixture migrates ix as the store's Open does, the marker
// recorded in meta/format.
func migrateFixture(t *testing.T, ix *Index) {
	t.Helper()
	err := Migrate(t.Context(), ix.db, ix.path, func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists([]byte("meta"))
		if err != nil {
			return err
		}
		return meta.Put([]byte("format"), []byte("reportjob/2"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sameFixture(t *testing.T, what string, got, want fixture) {
	t.Helper()
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("%s: the index answers\n%s\nwant (the bucket layout's answers)\n%s", what, gj, wj)
	}
}

// TestLegacyStore: a store written by the by-id bucket layout (before
// runs), migrated (Migrate, as the store's Open does), answers the same:
// every claim and every list, the by-id bucket gone; a second migration
// changes nothing; a rebuild of a period keeps its claims (carried from
// its migrated list) and releases the others; the sweep of everything
// leaves no claim.
func TestLegacyStore(t *testing.T) {
	ix, want := openFixture(t)
	sameFixture(t, "migrated", readFixture(t, ix), want)
	if n, _, _, _ := ixKeys(t, ix, "job"); n != 16 {
		t.Fatalf("the migrated fixture holds %d claims, want 16", n)
	}
	_ = ix.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketClaims) != nil {
			t.Error("the by-id bucket is still there after the migration")
		}
		return nil
	})
	migrateFixture(t, ix)
	sameFixture(t, "migrated twice", readFixture(t, ix), want)

	// Merged (two runs a level, blocks of 2, from here on): the same
	// answers from packed runs.
	ixMerges(t, 2, 2)
	ixCommit(t, ix, "job", fixP[3].Add(time.Hour), fixExp(fixP[3].Add(time.Hour)), fixStart, true)
	_ = ix.db.View(func(tx *bolt.Tx) error {
		if runs, err := jobMerged(tx, "job"); err != nil || len(runs) == 0 {
			t.Errorf("merged runs = %d, %v; want some", len(runs), err)
		}
		return nil
	})
	sameFixture(t, "after merges", readFixture(t, ix), want)

	// p0 rebuilt as Dedupe decides it from the same claims: a and c are
	// its own, moved is p3's (outside the window): none rewritten.
	w, err := ix.NewClaimWriter(t.Context(), "job", hourOf(fixP[0]), fixExp(fixP[0]), fixStart)
	if err != nil {
		t.Fatal(err)
	}
	var prev []string
	for id, err := range w.Previous() {
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, id)
	}
	if !slices.Equal(prev, []string{"a", "c", "moved"}) {
		t.Errorf("Previous = %q, want the legacy list [a c moved]", prev)
	}
	for _, id := range prev {
		if err := w.Add(id, indextest.FP(id, map[string]byte{"a": 1}[id]), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	sameFixture(t, "after the rebuild of p0", readFixture(t, ix), want)

	// p1 rebuilt without e: e's claim is released.
	w, err = ix.NewClaimWriter(t.Context(), "job", hourOf(fixP[1]), fixExp(fixP[1]), fixStart)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("d", indextest.FP("d", 0), false); err != nil {
		t.Fatal(err)
	}
	if err := w.Release("e"); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got := ixClaimPeriods(t, ix, "job", "d", "e")
	if len(got) != 1 || !got["d"].Equal(fixP[1]) {
		t.Errorf("claims of d, e after p1's rebuild = %v, want d's only", got)
	}

	// Everything expires: the sweep leaves nothing.
	end := fixNow.Add(365 * 24 * time.Hour)
	ixCommit(t, ix, "job", end, end.Add(2*time.Hour), end, false)
	if n, heads, _, _ := ixKeys(t, ix, "job"); n != 0 || heads != 1 {
		t.Errorf("after the sweep: %d claims, %d heads; want 0, 1", n, heads)
	}
}

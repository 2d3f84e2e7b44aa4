package dedupeindex

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// This file compiles against the code before packed lists too: the
// fixture was written by it (see TestWritePerIDFixture).

var writePerID = flag.Bool("write-perid-fixture", false,
	"write testdata/perid-layout.db and .json with this code (it was run at commit bc6e156, lists of one key per id, format reportjob/2)")

// The per-id fixture: hourly periods of job "job" from pidStart. Merges
// of three runs a level, blocks of four entries, batches of three ids.
var (
	pidStart = time.Date(2090, 6, 1, 0, 0, 0, 0, time.UTC)
	pidExp   = func(p time.Time) time.Time { return p.Add(time.Hour + collect.RetentionFloor) }
)

func pidP(i int) time.Time { return pidStart.Add(time.Duration(i) * time.Hour) }

func pidIDs(prefix string, from, to int) []string {
	var ids []string
	for i := from; i < to; i++ {
		ids = append(ids, fmt.Sprintf("%s%02d", prefix, i))
	}
	return ids
}

// pidAllIDs are the ids the fixture's tests look up (with ids between,
// before and after the listed ones).
func pidAllIDs() []string {
	ids := []string{"0", "moved", "zz"}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		ids = append(ids, pidIDs(p, 0, 60)...)
		ids = append(ids, p, p+"5", p+"99x")
	}
	slices.Sort(ids)
	return ids
}

// pidAnswers is what the index answers: the claims of pidAllIDs and the
// list of each period.
func pidAnswers(t *testing.T, ix *Index) fixture {
	t.Helper()
	f := fixture{Lists: map[string][]string{}}
	for batch := range slices.Chunk(pidAllIDs(), collect.MaxLookup) {
		claims, err := ix.Lookup(t.Context(), "job", batch)
		if err != nil {
			t.Fatal(err)
		}
		f.Claims = append(f.Claims, claims...)
	}
	slices.SortFunc(f.Claims, func(a, b collect.Claim) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	for i := range 12 {
		f.Lists[pidP(i).Format(time.RFC3339)] = ixList(t, ix, "job", pidP(i))
	}
	return f
}

// pidWrite runs a writer of period i: Previous read (its ids returned),
// then ids added (written unless in keep: carried), released what
// Previous yielded and is not added; Commit unless abort.
func pidWrite(t *testing.T, ix *Index, i int, ids, keep []string, abort bool) []string {
	t.Helper()
	p := pidP(i)
	w, err := ix.NewClaimWriter(t.Context(), "job", hourOf(p), pidExp(p), pidStart)
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
	add := slices.Sorted(slices.Values(append(slices.Clone(ids), keep...)))
	for _, id := range add {
		if err := w.Add(id, indextest.FP(id, byte(i)), !slices.Contains(keep, id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range prev {
		if !slices.Contains(add, id) {
			if err := w.Release(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if abort {
		w.Abort()
		return prev
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return prev
}

// pidPhase1 writes what the fixture holds: periods 0 to 2 merged into one
// run, 3 (rebuilt: d00-d09 carried, d10-d19 released, d20 new) and 4
// level-0 runs, and a writer of 5 that failed after writing f00-f08.
func pidPhase1(t *testing.T, ix *Index) {
	t.Helper()
	ixSmallBatches(t, 3, 5)
	ixMerges(t, 3, 4)
	pidWrite(t, ix, 0, pidIDs("a", 0, 20), nil, false)
	pidWrite(t, ix, 1, append(pidIDs("b", 0, 20), "moved"), nil, false)
	pidWrite(t, ix, 2, pidIDs("c", 0, 10), nil, false)
	pidWrite(t, ix, 3, append(pidIDs("d", 0, 20), "a05"), nil, false)
	pidWrite(t, ix, 4, pidIDs("e", 0, 10), nil, false)
	pidWrite(t, ix, 3, []string{"d20"}, pidIDs("d", 0, 10), false)
	pidWrite(t, ix, 5, pidIDs("f", 0, 10), nil, true)
}

// TestWritePerIDFixture writes the fixture (only with
// -write-perid-fixture), with the code before packed lists.
func TestWritePerIDFixture(t *testing.T) {
	if !*writePerID {
		t.Skip("without -write-perid-fixture")
	}
	path := filepath.Join("testdata", "perid-layout.db")
	_ = os.Remove(path)
	ix := openIndex(t, path)
	pidPhase1(t, ix)
	b, err := json.MarshalIndent(pidAnswers(t, ix), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "perid-layout.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

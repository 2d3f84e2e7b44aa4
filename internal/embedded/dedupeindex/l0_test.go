package dedupeindex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// ixPerIDLayout rewrites every list generation of job's period starting
// at period in the per-id layout (one key per id: the lists of a store of
// format reportjob/2), as the code before packed lists wrote them.
func ixPerIDLayout(t *testing.T, s *Index, job string, period time.Time) {
	t.Helper()
	start := sortable(period.UnixMilli())
	err := s.db.Update(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, job, false)
		gens := lists.Bucket(start)
		var names [][]byte
		_ = gens.ForEachBucket(func(k []byte) error {
			names = append(names, bytes.Clone(k))
			return nil
		})
		for _, g := range names {
			type kv struct{ k, v []byte }
			var kvs []kv
			lc, err := newListCursor(gens.Bucket(g), period.UnixMilli())
			if err != nil {
				return err
			}
			for ok := lc.first(); ok; ok = lc.next() {
				c, has, err := lc.claim()
				if err != nil {
					return err
				}
				e := kv{k: bytes.Clone(lc.id), v: []byte{}}
				if has {
					e.v = c.encode()
				}
				kvs = append(kvs, e)
			}
			if lc.err != nil {
				return lc.err
			}
			if err := gens.DeleteBucket(g); err != nil {
				return err
			}
			b, err := gens.CreateBucket(g)
			if err != nil {
				return err
			}
			for _, e := range kvs {
				if err := b.Put(e.k, e.v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openPerIDFixture opens a copy of the per-id fixture.
func openPerIDFixture(t *testing.T) (*Index, fixture) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := os.ReadFile(filepath.Join("testdata", "perid-layout.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var want fixture
	j, err := os.ReadFile(filepath.Join("testdata", "perid-layout.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &want); err != nil {
		t.Fatal(err)
	}
	return openIndex(t, path), want
}

// TestPerIDStore: a store whose lists the code before packed lists wrote
// (one key per id: level-0 runs, a merged run made of them, a failed
// writer's generation) answers as it did; this code then rebuilds its
// periods (claims carried from per-id lists, a failed writer's ids from
// Previous), merges runs of both layouts and writes more, and answers as
// a store this code wrote from the start does.
func TestPerIDStore(t *testing.T) {
	ix, want := openPerIDFixture(t)
	sameFixture(t, "per-id store", pidAnswers(t, ix), want)
	fresh := openIndex(t, filepath.Join(t.TempDir(), "fresh.db"))
	pidPhase1(t, fresh)
	sameFixture(t, "the same writes, packed", pidAnswers(t, fresh), want)
	_ = ix.db.View(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, "job", false)
		gens := lists.Bucket(sortable(pidP(3).UnixMilli()))
		return gens.ForEachBucket(func(k []byte) error {
			if gens.Bucket(k).Sequence() != layoutPerID {
				t.Errorf("fixture period 3 generation %x is not of the per-id layout", k)
			}
			return nil
		})
	})

	for _, s := range []*Index{ix, fresh} {
		// 3 rebuilt (its per-id list in the fixture): d00-d04 carried.
		prev := pidWrite(t, s, 3, []string{"d21"}, pidIDs("d", 0, 5), false)
		if w := append(pidIDs("d", 0, 10), "d20"); !slices.Equal(prev, w) {
			t.Errorf("Previous of period 3 = %q, want %q", prev, w)
		}
		// 5: the failed writer's ids (a per-id generation in the fixture).
		prev = pidWrite(t, s, 5, pidIDs("f", 0, 4), nil, false)
		if w := pidIDs("f", 0, 9); !slices.Equal(prev, w) {
			t.Errorf("Previous of period 5 = %q, want %q", prev, w)
		}
		// More periods: runs of both layouts merged; 6 spans 13 blocks.
		pidWrite(t, s, 6, pidIDs("g", 0, 50), nil, false)
		pidWrite(t, s, 7, []string{"moved"}, nil, false)
		pidWrite(t, s, 8, []string{"zz"}, nil, false)
		// 4 rebuilt after its run was merged: e05-e09 released, their
		// entries in the merged run invalid (an older generation).
		pidWrite(t, s, 4, nil, pidIDs("e", 0, 5), false)
	}
	got := pidAnswers(t, ix)
	sameFixture(t, "per-id store, written on", got, pidAnswers(t, fresh))
	_ = ix.db.View(func(tx *bolt.Tx) error {
		// Levels 1 of periods 0-2 and of 3-5 (3 and 5 packed, 4 per
		// id), then 6-8: level 2.
		if runs, err := jobMerged(tx, "job"); err != nil || len(runs) != 1 || runs[0].meta.level != 2 {
			t.Errorf("merged runs = %d, %v; want 1, of level 2", len(runs), err)
		}
		return nil
	})
	periods := map[string]time.Time{}
	for _, c := range got.Claims {
		periods[c.ID] = c.Period
	}
	for id, want := range map[string]int{
		"a00": 0, "a05": 0, "moved": 7, "d00": 3, "d04": 3, "d21": 3, "e00": 4, "e04": 4,
		"f00": 5, "f03": 5, "g00": 6, "g49": 6, "zz": 8,
		"d05": -1, "d10": -1, "d20": -1, "e05": -1, "e09": -1, "f04": -1, "f08": -1, "g50": -1, "g": -1, "g5": -1, "0": -1,
	} {
		p, ok := periods[id]
		switch {
		case want < 0 && ok:
			t.Errorf("%s claimed by %s, want no claim", id, p)
		case want >= 0 && (!ok || !p.Equal(pidP(want))):
			t.Errorf("%s claimed by %s (%v), want period %d", id, p, ok, want)
		}
	}
}

// TestPackedList: a list of 100 ids in blocks of 4 (batches of 7: whole
// blocks per batch) round-trips: one key per block, PeriodIDs in pages of
// 6 (ends mid-block), every claim; ids between, before and after the
// blocks have none, asked in any order. While it is written, Lookup sees
// the ids written, not those to come. A rebuild (a new generation) makes
// the old generation's claims invisible, also once merged.
func TestPackedList(t *testing.T) {
	ixSmallBatches(t, 7, 6)
	ixMerges(t, 2, 4)
	s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	p := pidP(0)
	var ids, between []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("k%03d", 2*i))
		between = append(between, fmt.Sprintf("k%03d", 2*i+1))
	}
	outside := []string{"a", "k", "k0000", "k0", "k1990", "k199", "z"}
	w, err := s.NewClaimWriter(t.Context(), "job", hourOf(p), pidExp(p), pidStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:50] {
		if err := w.Add(id, indextest.FP(id, 0), true); err != nil {
			t.Fatal(err)
		}
	}
	cw := w.(*claimWriter)
	if err := cw.flush(); err != nil {
		t.Fatal(err)
	}
	if err := cw.wait(); err != nil {
		t.Fatal(err)
	}
	got := ixClaimPeriods(t, s, "job", "k000", "k001", "k098", "k099", "k100", "k198")
	if len(got) != 2 || !got["k000"].Equal(p) || !got["k098"].Equal(p) {
		t.Errorf("Lookup while written = %v, want k000 and k098 (written)", got)
	}
	for _, id := range ids[50:] {
		if err := w.Add(id, indextest.FP(id, 0), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := ixList(t, s, "job", p); !slices.Equal(got, ids) {
		t.Errorf("PeriodIDs = %q, want %q", got, ids)
	}
	check := func(what string, want []string) {
		t.Helper()
		ask := append(append(append([]string{"m", "n"}, ids...), between...), outside...)
		claims := map[string]time.Time{}
		for batch := range slices.Chunk(ask, collect.MaxLookup) {
			maps.Copy(claims, ixClaimPeriods(t, s, "job", batch...))
		}
		if got := slices.Sorted(maps.Keys(claims)); !slices.Equal(got, want) {
			t.Errorf("%s: claims of %q, want %q", what, got, want)
		}
	}
	check("committed", ids)
	// The list itself: one key per block, each id found in any order,
	// the others not.
	err = s.db.View(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, "job", false)
		gens := lists.Bucket(sortable(p.UnixMilli()))
		var run *bolt.Bucket
		_ = gens.ForEachBucket(func(k []byte) error { run = gens.Bucket(k); return nil })
		// 12 blocks and the 2 ids of the flush above, 12 and the 2 of
		// Commit's.
		if run.Sequence() != layoutPacked || run.Stats().KeyN != 26 {
			t.Errorf("list: layout %d, %d keys; want %d, 26 (blocks of 4)", run.Sequence(), run.Stats().KeyN, layoutPacked)
		}
		r, err := newListReader(run, p.UnixMilli())
		if err != nil {
			return err
		}
		for _, order := range [][]string{ids, reversed(ids), between, outside} {
			for _, id := range order {
				c, ok, err := r.get([]byte(id))
				if err != nil {
					return err
				}
				if listed := slices.Contains(ids, id); ok != listed || (ok && (c.period != p.UnixMilli() || c.fp != indextest.FP(id, 0))) {
					t.Errorf("get(%q) = %+v, %v; want listed %v", id, c, ok, listed)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A merge (two runs a level) packs it into a merged run.
	ixCommit(t, s, "job", pidP(1), pidExp(pidP(1)), pidStart, true, "m")
	ixCommit(t, s, "job", pidP(2), pidExp(pidP(2)), pidStart, true, "n")
	_ = s.db.View(func(tx *bolt.Tx) error {
		if runs, err := jobMerged(tx, "job"); err != nil || len(runs) == 0 {
			t.Errorf("merged runs = %d, %v; want some", len(runs), err)
		}
		return nil
	})
	check("merged", append(slices.Clone(ids), "m", "n"))
	// Rebuilt: the first 30 ids carried, the rest released.
	w, err = s.NewClaimWriter(t.Context(), "job", hourOf(p), pidExp(p), pidStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:30] {
		if err := w.Add(id, [collect.FPLen]byte{}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[30:] {
		if err := w.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	check("rebuilt", append(slices.Clone(ids[:30]), "m", "n"))
	claims, err := s.Lookup(t.Context(), "job", ids[:30])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.FP != indextest.FP(c.ID, 0) || !c.End.Equal(p.Add(time.Hour)) || !c.Expires.Equal(pidExp(p)) {
			t.Errorf("carried claim %+v, want the first generation's", c)
		}
	}
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// TestPackedListCorrupt: a cut block (its last entry's claim cut), or a
// list of an unknown layout, is an error for Lookup of an id in it and
// for PeriodIDs, never a missing claim.
func TestPackedListCorrupt(t *testing.T) {
	ixMerges(t, 8, 4)
	for _, tc := range []struct {
		name string
		harm func(run *bolt.Bucket) error
	}{
		{"cut block", func(run *bolt.Bucket) error {
			k, v := run.Cursor().First()
			return run.Put(bytes.Clone(k), bytes.Clone(v[:len(v)-3]))
		}},
		{"unknown layout", func(run *bolt.Bucket) error { return run.SetSequence(7) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
			p := pidP(0)
			ixCommit(t, s, "job", p, pidExp(p), pidStart, true, pidIDs("a", 0, 10)...)
			err := s.db.Update(func(tx *bolt.Tx) error {
				_, _, lists, _ := jobPeriods(tx, "job", false)
				gens := lists.Bucket(sortable(p.UnixMilli()))
				k, _ := gens.Cursor().First()
				return tc.harm(gens.Bucket(k))
			})
			if err != nil {
				t.Fatal(err)
			}
			// a03: the last entry of the first block (blocks of 4).
			if got, err := s.Lookup(t.Context(), "job", []string{"a03"}); err == nil {
				t.Errorf("Lookup = %v, want an error", got)
			}
			var perr error
			for _, err := range s.PeriodIDs(t.Context(), "job", p) {
				if err != nil {
					perr = err
				}
			}
			if perr == nil {
				t.Error("PeriodIDs succeeded, want an error")
			}
		})
	}
}

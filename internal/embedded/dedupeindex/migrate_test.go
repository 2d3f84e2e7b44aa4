package dedupeindex

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestMigrateAfterOldBinary: a migration cut short (a kill after its
// per-period transactions, before the last one) leaves the store marked
// as the old format, so the binary from before still opens it and writes
// the by-id layout: its rebuild of a period commits a new generation and
// deletes the generation the cut migration gave a filter. The next
// migration must not keep that filter: it would name a run that is gone,
// and the first merge (every NewClaimWriter) would fail for good ("run of
// period ... generation 1 is missing"). Found through the binaries (see
// the review of issue 19; RELIABILITY.md, The embedded dedupe index): kill -9 of the new binary while it migrates,
// `run --backfill` of an old period with the old binary, then every run
// of the new binary failed.
func TestMigrateAfterOldBinary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := os.ReadFile(filepath.Join("testdata", "bucket-layout.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, path)
	// The migration cut short: every period done, the last transaction
	// (by-id bucket deleted, marker set) not.
	if _, err := migrateJob(t.Context(), ix.db, "job"); err != nil {
		t.Fatal(err)
	}
	// The old binary rebuilds p0 as its Commit did: a new generation
	// listing the same ids (no claim values: the by-id bucket holds
	// them), the head switched to it, the older generations deleted.
	start := sortable(fixP[0].UnixMilli())
	var gone uint64
	err = ix.db.Update(func(tx *bolt.Tx) error {
		heads, _, lists, _ := jobPeriods(tx, "job", false)
		h, err := decodeHead(heads.Get(start))
		if err != nil {
			return err
		}
		gens := lists.Bucket(start)
		next := h.gen + 1
		_ = gens.ForEachBucket(func(k []byte) error {
			next = max(next, binary.BigEndian.Uint64(k)+1)
			return nil
		})
		list, err := gens.CreateBucket(genKey(next))
		if err != nil {
			return err
		}
		err = gens.Bucket(genKey(h.gen)).ForEach(func(k, _ []byte) error { return list.Put(bytes.Clone(k), nil) })
		if err != nil {
			return err
		}
		gone, h.gen = h.gen, next
		if err := heads.Put(start, h.encode()); err != nil {
			return err
		}
		return deleteGensBefore(gens, next)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = ix.db.View(func(tx *bolt.Tx) error {
		if f, _ := jobBucket(tx, "job", bucketFilters, false); f == nil || f.Get(runKey(start, gone)) == nil {
			t.Fatalf("the cut migration left no filter of p0 generation %d: the test does not test the case", gone)
		}
		return nil
	})
	migrateFixture(t, ix)
	_, want := openFixture(t)
	sameFixture(t, "migrated after the old binary's rebuild", readFixture(t, ix), want)
	// Merges of every run (two a level): the first NewClaimWriter merges.
	ixMerges(t, 2, 2)
	next := fixP[3].Add(time.Hour)
	ixCommit(t, ix, "job", next, fixExp(next), fixStart, true)
	_ = ix.db.View(func(tx *bolt.Tx) error {
		if runs, err := jobMerged(tx, "job"); err != nil || len(runs) == 0 {
			t.Errorf("merged runs = %d, %v; want some", len(runs), err)
		}
		return nil
	})
	sameFixture(t, "after merges", readFixture(t, ix), want)
}

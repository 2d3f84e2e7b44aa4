package embedded

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
)

// TestOpenMigratesLegacyIndex: a store of format reportjob/1 whose dedupe
// index has the by-id layout (dedupeindex/testdata/bucket-layout.db,
// written by that code) is migrated by Open, once: the marker becomes
// reportjob/3 (which a binary from before refuses: it wants exactly
// reportjob/1), the by-id bucket is gone, the index answers what the old
// code answered, and a second Open writes nothing.
func TestOpenMigratesLegacyIndex(t *testing.T) {
	path := fixtureStore(t, "bucket-layout.db", "reportjob/1")
	var want struct {
		Claims []collect.Claim `json:"claims"`
	}
	j, err := os.ReadFile(filepath.Join("dedupeindex", "testdata", "bucket-layout.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &want); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of the reportjob/1 store: %v", err)
	}
	var ids []string
	for _, c := range want.Claims {
		ids = append(ids, c.ID)
	}
	ids = append(ids, "b", "h", "x-09") // released, never claimed, never written
	got, err := s.Lookup(t.Context(), "job", ids)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b collect.Claim) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want.Claims)
	if string(gj) != string(wj) {
		t.Errorf("migrated store answers\n%s\nwant\n%s", gj, wj)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	marker, txid := rawState(t, path)
	if marker != format || marker == "reportjob/1" {
		t.Errorf("format after the migration = %q, want %q (a binary before it wants reportjob/1, and refuses)", marker, format)
	}
	// Once: a second Open (and a writer) does not migrate again.
	s2 := open(t, path, Options{})
	_ = s2.Close()
	if m, id := rawState(t, path); m != format || id != txid {
		t.Errorf("second Open: format %q, last transaction %d; want %q, %d (no write)", m, id, format, txid)
	}
	s3 := open(t, path, Options{})
	start := time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := s3.NewClaimWriter(t.Context(), "job", report.Period{Start: start.Add(3 * time.Hour), End: start.Add(4 * time.Hour)},
		start.Add(4*time.Hour+collect.RetentionFloor), start)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := s3.Lookup(t.Context(), "job", ids); err != nil || len(got) != len(want.Claims) {
		t.Errorf("after a writer: %d claims, %v; want %d", len(got), err, len(want.Claims))
	}
}

// TestOpenRefusesOtherFormat: a file of an unknown format is refused.
func TestOpenRefusesOtherFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	setRaw(t, path, func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return meta.Put(keyFormat, []byte("reportjob/4"))
	})
	if s, err := Open(path, Options{}); err == nil {
		_ = s.Close()
		t.Fatal("Open of a reportjob/4 store succeeded")
	}
}

// TestFirstWriteMarksFormat: a store written without Init gets the marker
// with its first index write (so that a binary before reportjob/2, which
// would not read the runs, refuses it).
func TestFirstWriteMarksFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := open(t, path, Options{})
	start := time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := s.NewClaimWriter(t.Context(), "job", report.Period{Start: start, End: start.Add(time.Hour)},
		start.Add(time.Hour+collect.RetentionFloor), start)
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	_ = s.Close()
	if m, _ := rawState(t, path); m != format {
		t.Errorf("format after the first write = %q, want %q", m, format)
	}
}

func setRaw(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// rawState returns the file's format marker and last transaction id.
func rawState(t *testing.T, path string) (marker string, txid int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		txid = tx.ID()
		if meta := tx.Bucket(bucketMeta); meta != nil {
			marker = string(meta.Get(keyFormat))
		}
		return nil
	})
	return marker, txid
}

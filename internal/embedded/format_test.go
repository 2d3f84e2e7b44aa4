package embedded

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
)

// TestOpenTakesFormatV2: a store of format reportjob/2 (its lists of one
// key per id: dedupeindex/testdata/perid-layout.db, written by that code)
// is opened as it is: no migration, no write, the index answers what
// the old code answered. The first NewClaimWriter, which writes a packed
// list, records reportjob/3 (which a binary from before refuses: it
// wants reportjob/2 or reportjob/1), and the index still answers the
// same.
func TestOpenTakesFormatV2(t *testing.T) {
	path := fixtureStore(t, "perid-layout.db", formatV2)
	var want struct {
		Claims []collect.Claim `json:"claims"`
	}
	j, err := os.ReadFile(filepath.Join("dedupeindex", "testdata", "perid-layout.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &want); err != nil {
		t.Fatal(err)
	}
	_, txid := rawState(t, path)
	s := open(t, path, Options{})
	answers := func(what string) {
		t.Helper()
		var ids []string
		for _, c := range want.Claims {
			ids = append(ids, c.ID)
		}
		got := map[string]collect.Claim{}
		for i := 0; i < len(ids); i += collect.MaxLookup {
			cls, err := s.Lookup(t.Context(), "job", ids[i:min(i+collect.MaxLookup, len(ids))])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cls {
				got[c.ID] = c
			}
		}
		for _, c := range want.Claims {
			if g, ok := got[c.ID]; !ok || !g.Period.Equal(c.Period) || g.FP != c.FP || !g.Expires.Equal(c.Expires) {
				t.Errorf("%s: claim of %s = %+v, want %+v", what, c.ID, g, c)
			}
		}
	}
	answers("opened")
	_ = s.Close()
	if m, id := rawState(t, path); m != formatV2 || id != txid {
		t.Errorf("after Open and reads: format %q, last transaction %d; want %q, %d (no write)", m, id, formatV2, txid)
	}
	s = open(t, path, Options{})
	start := time.Date(2090, 6, 2, 0, 0, 0, 0, time.UTC)
	w, err := s.NewClaimWriter(t.Context(), "job", report.Period{Start: start, End: start.Add(time.Hour)},
		start.Add(time.Hour+collect.RetentionFloor), start.Add(-48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("new", [collect.FPLen]byte{1}, true); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	answers("after a writer")
	_ = s.Close()
	if m, _ := rawState(t, path); m != format || format != "reportjob/3" {
		t.Errorf("format after the first writer = %q, want reportjob/3", m)
	}
}

// fixtureStore copies the store fixture name (in dedupeindex/testdata,
// written by the index of its time alone) to a temporary file, marks it
// with format as the store of its time did, and returns its path.
func fixtureStore(t *testing.T, name, format string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := os.ReadFile(filepath.Join("dedupeindex", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	setRaw(t, path, func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return meta.Put(keyFormat, []byte(format))
	})
	return path
}

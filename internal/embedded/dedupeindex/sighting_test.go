package dedupeindex

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
)

// TestSightingsSwept: a sighting is swept once its expiry is at or before
// a later write's sweep time, as claims are; one rewritten with a later
// expiry is kept.
func TestSightingsSwept(t *testing.T) {
	ix := openIndex(t, filepath.Join(t.TempDir(), "store.db"))
	p := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	exp := p.Add(36 * 24 * time.Hour)
	old := []collect.Sighting{
		{ID: "a", Period: p, Kind: collect.SightingDropped, Expires: exp},
		{ID: "b", Period: p, Kind: collect.SightingRejected, Expires: exp},
	}
	if err := ix.RecordSightings(t.Context(), "j", old, p); err != nil {
		t.Fatal(err)
	}
	kept := old[1]
	kept.Expires = exp.Add(48 * time.Hour)
	if err := ix.RecordSightings(t.Context(), "j", []collect.Sighting{kept}, p); err != nil {
		t.Fatal(err)
	}
	later := collect.Sighting{ID: "c", Period: exp, Kind: collect.SightingDropped, Expires: exp.Add(36 * 24 * time.Hour)}
	if err := ix.RecordSightings(t.Context(), "j", []collect.Sighting{later}, exp); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"a": 0, "b": 1, "c": 1} {
		got, err := ix.Sightings(t.Context(), "j", id)
		if err != nil || len(got) != want {
			t.Errorf("sightings of %s: %+v, %v; want %d", id, got, err, want)
		}
	}
}

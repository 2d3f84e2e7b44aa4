package indextest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
)

// testSightings: every index records sightings (collect.SightingIndex):
// idempotently, one per (id, period, kind), by id, per job, with the
// latest expiry written.
func testSightings(t *testing.T, ix collect.Index) {
	si, ok := ix.(collect.SightingIndex)
	if !ok {
		t.Fatalf("%T does not implement collect.SightingIndex", ix)
	}
	odd := "ord-" + strings.Repeat("é", 3) + "#seen#x\x00y"
	ss := []collect.Sighting{
		{ID: "ord-1", Period: p1, Kind: collect.SightingDropped, Expires: exp1},
		{ID: "ord-1", Period: p1.Add(time.Hour), Kind: collect.SightingRejected, Expires: exp1.Add(time.Hour)},
		{ID: odd, Period: p0, Kind: collect.SightingRejected, Expires: exp0},
	}
	for range 2 { // idempotent
		if err := si.RecordSightings(ctx(t), ixJob, ss, p0); err != nil {
			t.Fatal(err)
		}
	}
	// The same sighting with a later expiry (a rebuild under a wider
	// window) keeps one record, with that expiry.
	later := ss[0]
	later.Expires = exp1.Add(24 * time.Hour)
	if err := si.RecordSightings(ctx(t), ixJob, []collect.Sighting{later}, p0); err != nil {
		t.Fatal(err)
	}
	got, err := si.Sightings(ctx(t), ixJob, "ord-1")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b collect.Sighting) int { return a.Period.Compare(b.Period) })
	want := []collect.Sighting{later, ss[1]}
	if len(got) != len(want) {
		t.Fatalf("sightings of ord-1: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || !got[i].Period.Equal(want[i].Period) || got[i].Kind != want[i].Kind || !got[i].Expires.Equal(want[i].Expires) {
			t.Fatalf("sightings of ord-1: %+v, want %+v", got, want)
		}
	}
	if got, err := si.Sightings(ctx(t), ixJob, odd); err != nil || len(got) != 1 || got[0].Kind != collect.SightingRejected || !got[0].Period.Equal(p0) {
		t.Fatalf("sightings of %q: %+v, %v", odd, got, err)
	}
	// Another id that is a prefix, another job: none.
	for _, q := range []struct{ job, id string }{{ixJob, "ord-"}, {ixJob, "ord-12"}, {"other-job", "ord-1"}} {
		if got, err := si.Sightings(ctx(t), q.job, q.id); err != nil || len(got) != 0 {
			t.Fatalf("sightings of %s/%s: %+v, %v; want none", q.job, q.id, got, err)
		}
	}
	// Bad input is refused.
	if err := si.RecordSightings(ctx(t), ixJob, []collect.Sighting{{ID: "", Period: p0, Kind: collect.SightingDropped, Expires: exp0}}, p0); err == nil {
		t.Fatal("an empty id was recorded")
	}
	if err := si.RecordSightings(ctx(t), ixJob, []collect.Sighting{{ID: "x", Period: p0, Kind: "lost", Expires: exp0}}, p0); err == nil {
		t.Fatal("an unknown kind was recorded")
	}
}

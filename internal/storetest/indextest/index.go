// Package indextest is the conformance suite every dedupe index
// (collect.Index) passes. A backend's own test calls Run with a factory
// that opens a fresh, empty index:
//
//	func TestIndexConformance(t *testing.T) {
//		indextest.Run(t, func(t *testing.T) collect.Index {
//			return openFresh(t) // new file, or new table
//		})
//	}
//
// FP makes the test fingerprints the suite uses, for backends' own tests.
package indextest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
)

// Run runs the dedupe index (collect.Index) conformance tests against the
// indexes open returns, each subtest with an index of its own (a fresh,
// empty store: new file / new table; open registers its own cleanup with
// t.Cleanup). Times are whole seconds, UTC, and far in the future, so
// that a store that expires items by the wall clock (DynamoDB's Time to
// Live) keeps them; sweeping by the report clock is each store's own test.
func Run(t *testing.T, open func(t *testing.T) collect.Index) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, ix collect.Index)
	}{
		{"LookupMissing", testLookupMissing},
		{"AddWriteThenLookup", testAddWriteThenLookup},
		{"AddWithoutWrite", testAddWithoutWrite},
		{"PeriodIDsCommitAbort", testPeriodIDsCommitAbort},
		{"ReplaceList", testReplaceList},
		{"Release", testRelease},
		{"OddIDs", testOddIDs},
		{"LargeList", testLargeList},
		{"ConcurrentLookups", testConcurrentLookups},
		{"AddOrder", testAddOrder},
		{"BadInput", testIndexBadInput},
		{"JobsAndPeriodsIndependent", testIndexIsolation},
		{"LookupReturnsExpired", testLookupReturnsExpired},
		{"WindowAtLookup", testWindowAtLookup},
		{"FailedWriterReleased", testFailedWriterReleased},
		{"Sightings", testSightings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := open(t)
			if ix == nil {
				t.Fatalf("index factory returned nil")
			}
			tc.fn(t, ix)
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

const ixJob = "billing-report"

var (
	// p0 is the period most tests write; its claims expire at exp0.
	p0   = time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
	p1   = p0.Add(time.Hour)
	exp0 = p0.Add(time.Hour + 35*24*time.Hour)
	exp1 = p1.Add(time.Hour + 35*24*time.Hour)
	// ixNow is the report clock: before every expiry.
	ixNow = p1.Add(2 * time.Hour)
)

// per is the hourly period starting at start.
func per(start time.Time) report.Period {
	return report.Period{Start: start, End: start.Add(time.Hour)}
}

// FP returns a test fingerprint of id; variant makes other content.
func FP(id string, variant byte) [collect.FPLen]byte {
	h := sha256.Sum256(append([]byte(id), variant))
	return [collect.FPLen]byte(h[:collect.FPLen])
}

// add is one ClaimWriter.Add.
type add struct {
	id    string
	fp    [collect.FPLen]byte
	write bool
}

func adds(write bool, ids ...string) []add {
	out := make([]add, len(ids))
	for i, id := range ids {
		out[i] = add{id, FP(id, 0), write}
	}
	return out
}

// commitList writes one ClaimWriter for the period: the adds (sorted
// here), then the releases, then Commit.
func commitList(t *testing.T, ix collect.Index, job string, period, expires time.Time, as []add, releases ...string) {
	t.Helper()
	w, err := ix.NewClaimWriter(ctx(t), job, per(period), expires, ixNow)
	if err != nil {
		t.Fatalf("NewClaimWriter(%s, %s): %v", job, period, err)
	}
	as = slices.Clone(as)
	slices.SortFunc(as, func(a, b add) int { return strings.Compare(a.id, b.id) })
	for _, a := range as {
		if err := w.Add(a.id, a.fp, a.write); err != nil {
			w.Abort()
			t.Fatalf("Add(%q): %v", a.id, err)
		}
	}
	for _, id := range releases {
		if err := w.Release(id); err != nil {
			w.Abort()
			t.Fatalf("Release(%q): %v", id, err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func lookup(t *testing.T, ix collect.Index, job string, ids ...string) map[string]collect.Claim {
	t.Helper()
	got := map[string]collect.Claim{}
	for batch := range slices.Chunk(ids, collect.MaxLookup) {
		claims, err := ix.Lookup(ctx(t), job, batch)
		if err != nil {
			t.Fatalf("Lookup(%d ids): %v", len(batch), err)
		}
		for _, c := range claims {
			if _, dup := got[c.ID]; dup {
				t.Errorf("Lookup returned %q twice", c.ID)
			}
			if !slices.Contains(batch, c.ID) {
				t.Errorf("Lookup returned %q, which was not asked for", c.ID)
			}
			got[c.ID] = c
		}
	}
	return got
}

func periodIDs(t *testing.T, ix collect.Index, job string, period time.Time) []string {
	t.Helper()
	var ids []string
	for id, err := range ix.PeriodIDs(ctx(t), job, period) {
		if err != nil {
			t.Fatalf("PeriodIDs(%s) after %d ids: %v", period, len(ids), err)
		}
		ids = append(ids, id)
	}
	return ids
}

// wantClaim checks that got is the claim of id by the hour starting at
// period (as commitList writes it) with fp and expires (at second
// precision).
func wantClaim(t *testing.T, got map[string]collect.Claim, id string, period time.Time, fp [collect.FPLen]byte, expires time.Time) {
	t.Helper()
	c, ok := got[id]
	switch {
	case !ok:
		t.Errorf("claim of %q missing", id)
	case !c.Period.Equal(period) || !c.End.Equal(per(period).End) || c.FP != fp || !c.Expires.Equal(expires.Truncate(time.Second)):
		t.Errorf("claim of %q = {Period %s, End %s, FP %x, Expires %s}, want {%s, %s, %x, %s}",
			id, c.Period, c.End, c.FP, c.Expires, period, per(period).End, fp, expires.Truncate(time.Second))
	case c.Period.Location() != time.UTC || c.End.Location() != time.UTC || c.Expires.Location() != time.UTC:
		t.Errorf("claim of %q: times %s and %s, want UTC", id, c.Period, c.Expires)
	}
}

func testLookupMissing(t *testing.T, ix collect.Index) {
	if got := lookup(t, ix, ixJob, "a", "b"); len(got) != 0 {
		t.Errorf("Lookup on an empty index = %v, want nothing", got)
	}
	if claims, err := ix.Lookup(ctx(t), ixJob, nil); err != nil || len(claims) != 0 {
		t.Errorf("Lookup(no ids) = %v, %v; want nothing, nil", claims, err)
	}
	if got := periodIDs(t, ix, ixJob, p0); len(got) != 0 {
		t.Errorf("PeriodIDs of a period never written = %q", got)
	}
	commitList(t, ix, ixJob, p0, exp0, adds(true, "a", "c"))
	got := lookup(t, ix, ixJob, "a", "b", "c", "d")
	if len(got) != 2 {
		t.Errorf("Lookup(a, b, c, d) returned %d claims, want a and c", len(got))
	}
	wantClaim(t, got, "a", p0, FP("a", 0), exp0)
	wantClaim(t, got, "c", p0, FP("c", 0), exp0)
	// Duplicates count once: 100 distinct ids among 151.
	ids := []string{"a"}
	for i := range 150 {
		ids = append(ids, fmt.Sprintf("id-%03d", i%99))
	}
	claims, err := ix.Lookup(ctx(t), ixJob, ids)
	if err != nil || len(claims) != 1 || claims[0].ID != "a" {
		t.Errorf("Lookup(100 distinct ids among %d) = %v, %v; want the claim of a", len(ids), claims, err)
	}
}

func testAddWriteThenLookup(t *testing.T, ix collect.Index) {
	as := []add{{"tx-1", FP("tx-1", 1), true}, {"tx-2", FP("tx-2", 2), true}, {"tx-3", FP("tx-3", 3), true}}
	commitList(t, ix, ixJob, p0, exp0, as)
	got := lookup(t, ix, ixJob, "tx-1", "tx-2", "tx-3")
	for _, a := range as {
		wantClaim(t, got, a.id, p0, a.fp, exp0)
	}
	if ids := periodIDs(t, ix, ixJob, p0); !slices.Equal(ids, []string{"tx-1", "tx-2", "tx-3"}) {
		t.Errorf("PeriodIDs = %q, want tx-1..3", ids)
	}
}

func testAddWithoutWrite(t *testing.T, ix collect.Index) {
	commitList(t, ix, ixJob, p0, exp0, adds(true, "kept", "moved"))
	later := exp0.Add(time.Hour)
	// "kept" joins the new list without being rewritten (its claim keeps
	// exp0); "moved" is rewritten with a new fp; "unclaimed" only joins
	// the list.
	commitList(t, ix, ixJob, p0, later, []add{
		{"kept", FP("kept", 0), false}, {"moved", FP("moved", 9), true}, {"unclaimed", FP("unclaimed", 0), false},
	})
	got := lookup(t, ix, ixJob, "kept", "moved", "unclaimed")
	wantClaim(t, got, "kept", p0, FP("kept", 0), exp0)
	wantClaim(t, got, "moved", p0, FP("moved", 9), later)
	if c, ok := got["unclaimed"]; ok {
		t.Errorf("Add(write=false) wrote a claim: %+v", c)
	}
	if ids := periodIDs(t, ix, ixJob, p0); !slices.Equal(ids, []string{"kept", "moved", "unclaimed"}) {
		t.Errorf("PeriodIDs = %q, want kept, moved, unclaimed", ids)
	}
}

func testPeriodIDsCommitAbort(t *testing.T, ix collect.Index) {
	first := []string{"b", "a", "c", "aa", "B", "a0"}
	commitList(t, ix, ixJob, p0, exp0, adds(true, first...))
	want := slices.Sorted(slices.Values(first)) // byte order: B a a0 aa b c
	if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, want) {
		t.Fatalf("PeriodIDs = %q, want %q", got, want)
	}

	// A writer in progress leaves the committed list in force.
	w, err := ix.NewClaimWriter(ctx(t), ixJob, per(p0), exp0, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x", "y"} {
		if err := w.Add(id, FP(id, 0), false); err != nil {
			t.Fatal(err)
		}
	}
	if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, want) {
		t.Errorf("PeriodIDs during a writer = %q, want the committed %q", got, want)
	}
	w.Abort()
	w.Abort() // a second Abort does nothing
	if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, want) {
		t.Errorf("PeriodIDs after Abort = %q, want the committed %q", got, want)
	}
	if err := w.Add("z", FP("z", 0), false); err == nil {
		t.Error("Add after Abort succeeded, want an error")
	}
	if err := w.Commit(); err == nil {
		t.Error("Commit after Abort succeeded, want an error")
	}
	if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, want) {
		t.Errorf("PeriodIDs after a Commit refused = %q, want %q", got, want)
	}

	// An empty list replaces a full one.
	commitList(t, ix, ixJob, p0, exp0, nil)
	if got := periodIDs(t, ix, ixJob, p0); len(got) != 0 {
		t.Errorf("PeriodIDs after committing no ids = %q, want none", got)
	}
}

func testReplaceList(t *testing.T, ix collect.Index) {
	commitList(t, ix, ixJob, p0, exp0, adds(true, "1", "2", "3", "4"))
	for round, ids := range [][]string{{"2", "3", "5"}, {"0", "5", "6", "7", "8"}, {"5"}} {
		commitList(t, ix, ixJob, p0, exp0, adds(true, ids...))
		if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, ids) {
			t.Errorf("round %d: PeriodIDs = %q, want %q", round, got, ids)
		}
	}
	// Early stop: the sequence ends when the consumer stops.
	n := 0
	for _, err := range ix.PeriodIDs(ctx(t), ixJob, p0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("consumed %d ids, want 1", n)
	}
}

func testRelease(t *testing.T, ix collect.Index) {
	commitList(t, ix, ixJob, p0, exp0, adds(true, "a", "b", "c"))
	commitList(t, ix, ixJob, p1, exp1, adds(true, "d"))
	// p0 is rebuilt: a is gone, d (p1's) is released by mistake, and an id
	// without a claim is released: only a's claim goes.
	commitList(t, ix, ixJob, p0, exp0, adds(false, "b", "c"), "a", "d", "never-claimed")
	got := lookup(t, ix, ixJob, "a", "b", "c", "d", "never-claimed")
	if c, ok := got["a"]; ok {
		t.Errorf("released claim of a is still there: %+v", c)
	}
	wantClaim(t, got, "b", p0, FP("b", 0), exp0)
	wantClaim(t, got, "c", p0, FP("c", 0), exp0)
	wantClaim(t, got, "d", p1, FP("d", 0), exp1)
	if ids := periodIDs(t, ix, ixJob, p0); !slices.Equal(ids, []string{"b", "c"}) {
		t.Errorf("PeriodIDs(p0) = %q, want b, c", ids)
	}
	if ids := periodIDs(t, ix, ixJob, p1); !slices.Equal(ids, []string{"d"}) {
		t.Errorf("PeriodIDs(p1) = %q, want d", ids)
	}
}

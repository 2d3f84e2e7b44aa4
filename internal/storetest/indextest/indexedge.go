package indextest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
)

// Edge cases of the dedupe index suite (Run): odd and bad input,
// a large list, concurrency, isolation.

func testOddIDs(t *testing.T, ix collect.Index) {
	ids := []string{
		"#", "##", "a#claim#b", "x#period#1", "with space", " leading", "trailing ",
		"日本語", "Agência", "🚀", "%41", "a/b\\c", "\"quoted\"", "tab\there", "é",
		strings.Repeat("é", 256), strings.Repeat("💰", 256), strings.Repeat("z", 256),
	}
	var as []add
	for i, id := range ids {
		as = append(as, add{id, FP(id, byte(i)), true})
	}
	commitList(t, ix, ixJob, p0, exp0, as)
	got := lookup(t, ix, ixJob, ids...)
	for _, a := range as {
		wantClaim(t, got, a.id, p0, a.fp, exp0)
	}
	want := slices.Sorted(slices.Values(ids))
	if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, want) {
		t.Errorf("PeriodIDs = %q, want %q", got, want)
	}
}

// largeID is the i-th id of a large list: ascending, with a random-looking
// tail so that it does not compress to nothing.
func largeID(i int) string {
	h := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
	return fmt.Sprintf("%07d-%s", i, hex.EncodeToString(h[:10]))
}

func testLargeList(t *testing.T, ix collect.Index) {
	const n = 200_000
	write := func(i int) bool { return i%1000 == 0 }
	w, err := ix.NewClaimWriter(ctx(t), ixJob, per(p0), exp0, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := largeID(i)
		if err := w.Add(id, FP(id, 0), write(i)); err != nil {
			w.Abort()
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	// Streamed: compared one by one, never held.
	i := 0
	for id, err := range ix.PeriodIDs(ctx(t), ixJob, p0) {
		if err != nil {
			t.Fatalf("PeriodIDs after %d ids: %v", i, err)
		}
		if id != largeID(i) {
			t.Fatalf("PeriodIDs id %d = %q, want %q", i, id, largeID(i))
		}
		i++
	}
	if i != n {
		t.Fatalf("PeriodIDs yielded %d ids, want %d", i, n)
	}
	ids := []string{largeID(0), largeID(1), largeID(1000), largeID(n - 1000), largeID(n - 1)}
	got := lookup(t, ix, ixJob, ids...)
	if len(got) != 3 {
		t.Errorf("Lookup found %d claims, want the 3 written", len(got))
	}
	for _, i := range []int{0, 1000, n - 1000} {
		wantClaim(t, got, largeID(i), p0, FP(largeID(i), 0), exp0)
	}
	// Replaced by a small list: nothing of the large one remains visible.
	commitList(t, ix, ixJob, p0, exp0, adds(false, "only"))
	if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, []string{"only"}) {
		t.Errorf("PeriodIDs after replacing the large list = %d ids, want [only]", len(got))
	}
}

func testConcurrentLookups(t *testing.T, ix collect.Index) {
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("tx-%04d", i))
	}
	commitList(t, ix, ixJob, p0, exp0, adds(true, ids...))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for batch := range slices.Chunk(ids[g*10:], collect.MaxLookup) {
				// 99 claimed ids and a missing one.
				ask := append(slices.Clone(batch[1:]), fmt.Sprintf("missing-%d", g))
				claims, err := ix.Lookup(ctx(t), ixJob, ask)
				if err == nil && len(claims) != len(batch)-1 {
					err = fmt.Errorf("reader %d: %d claims for %d claimed ids", g, len(claims), len(batch)-1)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testAddOrder(t *testing.T, ix collect.Index) {
	commitList(t, ix, ixJob, p0, exp0, adds(true, "m"))
	for _, tc := range []struct {
		name string
		ids  []string
	}{
		{"descending", []string{"b", "a"}},
		{"duplicate", []string{"a", "a"}},
		{"byte order", []string{"a", "B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ix.NewClaimWriter(ctx(t), ixJob, per(p0), exp0, ixNow)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add(tc.ids[0], FP(tc.ids[0], 0), true); err != nil {
				t.Fatal(err)
			}
			err = w.Add(tc.ids[1], FP(tc.ids[1], 0), true)
			if err == nil || !strings.Contains(err.Error(), "ascending") {
				t.Errorf("Add(%q) after Add(%q) = %v, want an error saying ids must be ascending", tc.ids[1], tc.ids[0], err)
			}
			if err := w.Commit(); err == nil {
				t.Error("Commit after a failed Add succeeded, want the error")
			}
			w.Abort()
			if got := periodIDs(t, ix, ixJob, p0); !slices.Equal(got, []string{"m"}) {
				t.Errorf("PeriodIDs = %q, want the committed [m]", got)
			}
		})
	}
}

func testIndexBadInput(t *testing.T, ix collect.Index) {
	c := ctx(t)
	for _, job := range []string{"", "a#b", "a b", "job/x"} {
		if _, err := ix.Lookup(c, job, []string{"a"}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", job)) {
			t.Errorf("Lookup(job %q) = %v, want an error naming it", job, err)
		}
		if _, err := ix.NewClaimWriter(c, job, per(p0), exp0, ixNow); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", job)) {
			t.Errorf("NewClaimWriter(job %q) = %v, want an error naming it", job, err)
		}
		for _, err := range ix.PeriodIDs(c, job, p0) {
			if err == nil {
				t.Errorf("PeriodIDs(job %q) yielded an id", job)
			}
			break
		}
	}
	if _, err := ix.NewClaimWriter(c, ixJob, report.Period{End: p1}, exp0, ixNow); err == nil {
		t.Error("NewClaimWriter(zero period) succeeded")
	}
	if _, err := ix.NewClaimWriter(c, ixJob, per(p0), p0, ixNow); err == nil || !strings.Contains(err.Error(), "expires") {
		t.Errorf("NewClaimWriter(expires = period) = %v, want an error about expires", err)
	}
	var many []string
	for i := range collect.MaxLookup + 1 {
		many = append(many, fmt.Sprint(i))
	}
	if _, err := ix.Lookup(c, ixJob, many); err == nil || !strings.Contains(err.Error(), "101") {
		t.Errorf("Lookup(101 ids) = %v, want an error saying 101", err)
	}
	badIDs := []struct{ id, want string }{
		{"", "empty"},
		{"bad\xffutf8", "UTF-8"},
		{strings.Repeat("é", 257), "257 characters"},
	}
	for _, tc := range badIDs {
		if _, err := ix.Lookup(c, ixJob, []string{"ok", tc.id}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Lookup(%.20q) = %v, want an error saying %q", tc.id, err, tc.want)
		}
		w, err := ix.NewClaimWriter(c, ixJob, per(p0), exp0, ixNow)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(tc.id, FP(tc.id, 0), true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%.20q) = %v, want an error saying %q", tc.id, err, tc.want)
		}
		w.Abort()
		w, err = ix.NewClaimWriter(c, ixJob, per(p0), exp0, ixNow)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Release(tc.id); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Release(%.20q) = %v, want an error saying %q", tc.id, err, tc.want)
		}
		w.Abort()
	}
	if got := periodIDs(t, ix, ixJob, p0); len(got) != 0 {
		t.Errorf("refused writers left a list: %q", got)
	}
}

func testIndexIsolation(t *testing.T, ix collect.Index) {
	const other = "other.job_2"
	commitList(t, ix, ixJob, p0, exp0, adds(true, "a", "b"))
	commitList(t, ix, other, p0, exp0, []add{{"a", FP("a", 7), true}})
	commitList(t, ix, ixJob, p1, exp1, adds(true, "c"))
	got := lookup(t, ix, ixJob, "a", "b", "c")
	wantClaim(t, got, "a", p0, FP("a", 0), exp0)
	wantClaim(t, got, "c", p1, FP("c", 0), exp1)
	gotOther := lookup(t, ix, other, "a", "b", "c")
	if len(gotOther) != 1 {
		t.Errorf("job %s sees %d claims, want its own 1", other, len(gotOther))
	}
	wantClaim(t, gotOther, "a", p0, FP("a", 7), exp0)
	for _, tc := range []struct {
		job    string
		period time.Time
		want   []string
	}{
		{ixJob, p0, []string{"a", "b"}}, {ixJob, p1, []string{"c"}}, {other, p0, []string{"a"}},
		{other, p1, nil}, {ixJob, p0.Add(time.Millisecond), nil},
	} {
		if got := periodIDs(t, ix, tc.job, tc.period); !slices.Equal(got, tc.want) {
			t.Errorf("PeriodIDs(%s, %s) = %q, want %q", tc.job, tc.period.Format(time.RFC3339Nano), got, tc.want)
		}
	}
}

// testLookupReturnsExpired: the caller decides what an expired claim
// means; the store returns it while it is stored.
func testLookupReturnsExpired(t *testing.T, ix collect.Index) {
	short := p0.Add(time.Hour + time.Second) // expires right after p0 ends
	commitList(t, ix, ixJob, p0, short, adds(true, "a"))
	got := lookup(t, ix, ixJob, "a")
	wantClaim(t, got, "a", p0, FP("a", 0), short)
	if ids := periodIDs(t, ix, ixJob, p0); !slices.Equal(ids, []string{"a"}) {
		t.Errorf("PeriodIDs = %q, want [a]", ids)
	}
}

// testWindowAtLookup: a claim records its period (start and end), so that
// the window in force at look-up decides whether it counts, not the one it
// was written with (SPEC section 6): raising report.dedupe_window protects
// the claims already written, lowering it releases the older ones.
func testWindowAtLookup(t *testing.T, ix collect.Index) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name          string
		period        time.Duration
		before, after time.Duration
		retry         time.Duration // from the claim's period start
		want          bool
	}{
		{"1d to 3d, the next hour", time.Hour, 1 * day, 3 * day, time.Hour, true},
		{"1d to 3d, 2 days later", time.Hour, 1 * day, 3 * day, 2 * day, true},
		{"35d to 60d, 11 days later", day, 35 * day, 60 * day, 11 * day, true},
		{"35d to 60d, 50 days later", day, 35 * day, 60 * day, 50 * day, true},
		{"35d to 1d, 2 days later", time.Hour, 35 * day, 1 * day, 2 * day, false},
		{"35d to 1d, the next hour", time.Hour, 35 * day, 1 * day, time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := "window-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
			p := report.Period{Start: p0, End: p0.Add(tc.period)}
			w, err := ix.NewClaimWriter(ctx(t), job, p, p.End.Add(collect.ClaimRetention(tc.before)), ixNow)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add("tx-1", FP("tx-1", 0), true); err != nil {
				w.Abort()
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			cl, ok := lookup(t, ix, job, "tx-1")["tx-1"]
			if !ok {
				t.Fatal("claim of tx-1 missing")
			}
			if !cl.Period.Equal(p.Start) || !cl.End.Equal(p.End) {
				t.Errorf("claim of tx-1 is of [%s, %s), want [%s, %s)", cl.Period, cl.End, p.Start, p.End)
			}
			later := report.Period{Start: p.Start.Add(tc.retry), End: p.End.Add(tc.retry)}
			if got := cl.Counts(later, tc.after); got != tc.want {
				t.Errorf("the claim counts for %s with window %s: %v, want %v", later.Start, tc.after, got, tc.want)
			}
			if tc.want && !cl.Expires.After(later.Start) {
				t.Errorf("the claim expires at %s, before the period %s it counts for", cl.Expires, later.Start)
			}
		})
	}
}

// Package outboxtest is the conformance suite of outbox.Store: every state
// store that keeps an outbox passes it (storetest.Run runs it).
package outboxtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/outbox"
)

// Store is an outbox and the job state whose lease fences it (the same
// store).
type Store interface {
	outbox.Store
	checkpoint.Store
}

const job = "billing-report"

var t0 = time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)

// Run runs the suite; open returns a fresh, empty store each call.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"EnqueueIdempotent", testEnqueueIdempotent},
		{"RecordAndPending", testRecordAndPending},
		{"Since", testSince},
		{"Fenced", testFenced},
		{"JobsApart", testJobsApart},
		{"Many", testMany},
		{"MarketplaceMonth", testMarketplaceMonth},
	} {
		t.Run("Outbox"+tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func lease(t *testing.T, s Store, job, owner string, now time.Time) checkpoint.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), job, owner, now, time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return l
}

func entry(id string, at time.Time) outbox.Entry {
	return outbox.Entry{ID: id, Kind: outbox.KindEvent, Target: "ep-1", At: at, Payload: []byte(`{"id":"` + id + `"}`)}
}

func ids(es []outbox.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func testEnqueueIdempotent(t *testing.T, s Store) {
	l := lease(t, s, job, "a", t0)
	n, err := s.Enqueue(t.Context(), job, l, t0, []outbox.Entry{entry("event/e1/ep-1", t0), entry("mail/2026-03/acme/1", t0)})
	if err != nil || n != 2 {
		t.Fatalf("Enqueue = %d, %v; want 2", n, err)
	}
	sent := entry("event/e1/ep-1", t0).Delivered(t0.Add(time.Second))
	if err := s.Record(t.Context(), job, l, t0, sent); err != nil {
		t.Fatal(err)
	}
	changed := entry("event/e1/ep-1", t0.Add(time.Hour))
	changed.Payload = []byte(`{"other":1}`)
	n, err = s.Enqueue(t.Context(), job, l, t0, []outbox.Entry{changed, entry("event/e2/ep-1", t0)})
	if err != nil || n != 1 {
		t.Fatalf("second Enqueue = %d, %v; want 1 (one new)", n, err)
	}
	all, err := s.Since(t.Context(), job, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(all); !slices.Equal(got, []string{"event/e1/ep-1", "event/e2/ep-1", "mail/2026-03/acme/1"}) {
		t.Fatalf("entries %v", got)
	}
	e1 := all[0]
	if string(e1.Payload) != `{"id":"event/e1/ep-1"}` || !e1.At.Equal(t0) || e1.Sent.IsZero() || e1.Target != "ep-1" || e1.Kind != outbox.KindEvent {
		t.Errorf("an entry enqueued again changed: %+v", e1)
	}
	got, err := s.Get(t.Context(), job, []string{"mail/2026-03/acme/1", "absent", "event/e2/ep-1"})
	if err != nil || len(got) != 2 || got["event/e2/ep-1"].ID != "event/e2/ep-1" || !got["mail/2026-03/acme/1"].At.Equal(t0) {
		t.Errorf("Get = %v, %v", got, err)
	}
	mark := outbox.Entry{ID: "mark/month/2026-03", Kind: outbox.KindMark, At: t0, Sent: t0}
	if n, err := s.Enqueue(t.Context(), job, l, t0, []outbox.Entry{mark}); err != nil || n != 1 {
		t.Fatalf("Enqueue of a mark = %d, %v", n, err)
	}
	if p, _ := s.Pending(t.Context(), job); slices.Contains(p, mark.ID) {
		t.Errorf("a mark enqueued as sent is pending")
	}
	if all[2].Kind != outbox.KindEvent || all[2].At.Location() != time.UTC {
		t.Errorf("entry %+v", all[2])
	}
}

func testRecordAndPending(t *testing.T, s Store) {
	l := lease(t, s, job, "a", t0)
	if _, err := s.Enqueue(t.Context(), job, l, t0, []outbox.Entry{entry("a", t0), entry("b", t0), entry("c", t0)}); err != nil {
		t.Fatal(err)
	}
	failed := entry("b", t0).Failed(t0.Add(1500*time.Millisecond), errors.New("503 Service Unavailable"))
	if err := s.Record(t.Context(), job, l, t0, failed); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(t.Context(), job, l, t0, entry("a", t0).Delivered(t0)); err != nil {
		t.Fatal(err)
	}
	p, err := s.Pending(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p, []string{"b", "c"}) {
		t.Fatalf("Pending %v, want [b c]", p)
	}
	got, err := s.Get(t.Context(), job, p[:1])
	if err != nil {
		t.Fatal(err)
	}
	b := got["b"]
	if b.Attempts != 1 || !b.NextAttempt.Equal(failed.NextAttempt) || b.LastError != "503 Service Unavailable" || !b.Sent.IsZero() {
		t.Errorf("failed entry read back as %+v, want %+v", b, failed)
	}
	if err := s.Record(t.Context(), job, l, t0, entry("zz", t0)); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("Record of an absent entry: %v, want ErrNotFound", err)
	}
	if _, err := s.Enqueue(t.Context(), job, l, t0, []outbox.Entry{{ID: "x", Kind: "fax", At: t0}}); err == nil {
		t.Error("Enqueue of a bad entry: no error")
	}
}

func testSince(t *testing.T, s Store) {
	l := lease(t, s, job, "a", t0)
	var es []outbox.Entry
	for i := range 5 {
		es = append(es, entry(fmt.Sprintf("e%d", i), t0.Add(time.Duration(i)*24*time.Hour)))
	}
	if _, err := s.Enqueue(t.Context(), job, l, t0, es); err != nil {
		t.Fatal(err)
	}
	got, err := s.Since(t.Context(), job, t0.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []string{"e2", "e3", "e4"}) {
		t.Errorf("Since = %v", ids(got))
	}
}

func testFenced(t *testing.T, s Store) {
	l := lease(t, s, job, "a", t0)
	if _, err := s.Enqueue(t.Context(), job, l, t0, []outbox.Entry{entry("a", t0)}); err != nil {
		t.Fatal(err)
	}
	// Expired: nothing is written.
	late := t0.Add(2 * time.Minute)
	if _, err := s.Enqueue(t.Context(), job, l, late, []outbox.Entry{entry("b", t0)}); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Enqueue with an expired lease: %v", err)
	}
	if err := s.Record(t.Context(), job, l, late, entry("a", t0).Delivered(late)); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Record with an expired lease: %v", err)
	}
	// Taken over: the old holder writes nothing.
	l2 := lease(t, s, job, "b", late)
	if err := s.Record(t.Context(), job, l, late, entry("a", t0).Delivered(late)); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Record with a lease taken over: %v", err)
	}
	p, _ := s.Pending(t.Context(), job)
	if !slices.Equal(p, []string{"a"}) {
		t.Errorf("Pending %v after refused writes, want [a]", p)
	}
	if err := s.Record(t.Context(), job, l2, late, entry("a", t0).Delivered(late)); err != nil {
		t.Errorf("Record by the new holder: %v", err)
	}
}

func testJobsApart(t *testing.T, s Store) {
	la := lease(t, s, "job-a", "a", t0)
	lb := lease(t, s, "job-b", "b", t0)
	if _, err := s.Enqueue(t.Context(), "job-a", la, t0, []outbox.Entry{entry("x", t0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(t.Context(), "job-b", lb, t0, []outbox.Entry{entry("y", t0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(t.Context(), "job-b", la, t0, []outbox.Entry{entry("z", t0)}); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Enqueue under another job's lease: %v", err)
	}
	p, _ := s.Pending(t.Context(), "job-a")
	if !slices.Equal(p, []string{"x"}) {
		t.Errorf("job-a pending %v", p)
	}
}

// testMany enqueues more entries than one write of a store takes.
func testMany(t *testing.T, s Store) {
	l := lease(t, s, job, "a", t0)
	var es []outbox.Entry
	for i := range 130 {
		es = append(es, entry(fmt.Sprintf("m%03d", i), t0.Add(time.Duration(i)*time.Hour)))
	}
	if n, err := s.Enqueue(t.Context(), job, l, t0, es); err != nil || n != 130 {
		t.Fatalf("Enqueue = %d, %v", n, err)
	}
	if n, err := s.Enqueue(t.Context(), job, l, t0, es); err != nil || n != 0 {
		t.Fatalf("Enqueue again = %d, %v", n, err)
	}
	p, err := s.Pending(t.Context(), job)
	if err != nil || len(p) != 130 {
		t.Fatalf("Pending: %d, %v", len(p), err)
	}
}

// testMarketplaceMonth enqueues a month whose ids together are larger
// than one DynamoDB item may be (400 KB): 3,000 e-mails of agencies with
// 140-character ids, 480 KB of ids. They are all pending, then 10 are
// sent; Since finds them all.
func testMarketplaceMonth(t *testing.T, s Store) {
	l := lease(t, s, job, "a", t0)
	long := strings.Repeat("marketplace-agency-", 8)[:140]
	const n = 3000
	es := make([]outbox.Entry, n)
	for i := range es {
		es[i] = outbox.Entry{ID: fmt.Sprintf("mail/2026-03/%s-%05d/1", long, i), Kind: outbox.KindMail, Target: long, At: t0,
			Payload: []byte(`{"month":"2026-03"}`)}
	}
	if got, err := s.Enqueue(t.Context(), job, l, t0, es); err != nil || got != n {
		t.Fatalf("Enqueue of %d entries with %d bytes of ids = %d, %v", n, n*len(es[0].ID), got, err)
	}
	for _, e := range es[:10] {
		if err := s.Record(t.Context(), job, l, t0, e.Delivered(t0)); err != nil {
			t.Fatalf("Record %s: %v", e.ID, err)
		}
	}
	p, err := s.Pending(t.Context(), job)
	if err != nil || len(p) != n-10 || p[0] != es[10].ID {
		t.Fatalf("Pending: %d entries, %v; want %d from %s", len(p), err, n-10, es[10].ID)
	}
	all, err := s.Since(t.Context(), job, t0)
	if err != nil || len(all) != n || all[0].Sent.IsZero() {
		t.Fatalf("Since: %d entries, %v; want %d, the first sent", len(all), err, n)
	}
}

package embedded

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/outbox"
)

// TestOutboxPendingIndexMadeFromAnOlderFile: an outbox written before the
// pending index (the index bucket removed here) is read whole by Pending;
// its next write makes the index from it, with every entry still pending,
// and Pending answers from the index after that.
func TestOutboxPendingIndexMadeFromAnOlderFile(t *testing.T) {
	s, l, t0 := leasedStore(t)
	var es []outbox.Entry
	for i := range 5 {
		es = append(es, outbox.Entry{ID: fmt.Sprintf("e%d", i), Kind: outbox.KindEvent, Target: "ep", At: t0})
	}
	es[0] = es[0].Delivered(t0)
	if _, err := s.Enqueue(t.Context(), "j", l, t0, es); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketOutboxPending) }); err != nil {
		t.Fatal(err)
	}
	pending := func(want ...string) { t.Helper(); wantPending(t, s, want...) }
	pending("e1", "e2", "e3", "e4") // the whole outbox read
	if err := s.Record(t.Context(), "j", l, t0, es[2].Delivered(t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketOutboxPending).Bucket([]byte("j")).Stats().KeyN != 3 {
			return fmt.Errorf("the index made by Record does not hold the 3 pending entries")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pending("e1", "e3", "e4") // from the index
}

// TestOutboxPendingIndexAfterAnOlderBinary: a file whose index exists is
// written again by an earlier binary (a release rolled back), which knows
// no index: it enqueues entries without indexing them and marks entries
// sent without taking them out. Pending still lists every entry not sent
// (read whole while the index is behind), never one sent, and the next
// Enqueue brings the index up to date.
func TestOutboxPendingIndexAfterAnOlderBinary(t *testing.T) {
	s, l, t0 := leasedStore(t)
	ev := func(id string) outbox.Entry {
		return outbox.Entry{ID: id, Kind: outbox.KindEvent, Target: "ep", At: t0}
	}
	if _, err := s.Enqueue(t.Context(), "j", l, t0, []outbox.Entry{ev("e1"), ev("e2")}); err != nil {
		t.Fatal(err)
	}
	// The earlier binary: e3 enqueued, e1 sent, straight into the outbox.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox).Bucket([]byte("j"))
		for _, e := range []outbox.Entry{ev("e3"), ev("e1").Delivered(t0)} {
			v, err := json.Marshal(outboxRec(e))
			if err != nil {
				return err
			}
			if err := b.Put([]byte(e.ID), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pending := func(want ...string) { t.Helper(); wantPending(t, s, want...) }
	pending("e2", "e3")
	if _, err := s.Enqueue(t.Context(), "j", l, t0, []outbox.Entry{ev("e4")}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketOutboxPending).Bucket([]byte("j")).Stats().KeyN; n != 3 {
			return fmt.Errorf("the index after Enqueue holds %d entries, want e2, e3, e4", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pending("e2", "e3", "e4")
}

// wantPending checks that job "j"'s Pending is want.
func wantPending(t *testing.T, s *Store, want ...string) {
	t.Helper()
	got, err := s.Pending(t.Context(), "j")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Pending: %v, want %v", got, want)
	}
}

// leasedStore is a new store and a lease on its job "j" at t0.
func leasedStore(t *testing.T) (*Store, checkpoint.Lease, time.Time) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t0 := time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)
	l, err := s.Acquire(t.Context(), "j", "me", t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return s, l, t0
}

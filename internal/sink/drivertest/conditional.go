package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

const manifestKey = "manifests/period=20240101T0000Z/manifest.json"

func testIfNoneMatch(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	ctx := context.Background()
	first, err := b.PutBytes(ctx, manifestKey, []byte(`{"revision":1}`), sink.PutOptions{IfNoneMatch: true, ContentType: "application/json"})
	if err != nil {
		t.Fatalf("first IfNoneMatch Put: %v", err)
	}
	requireAttrs(t, "Put", first, manifestKey, 14)
	_, err = b.PutBytes(ctx, manifestKey, []byte(`{"revision":2}`), sink.PutOptions{IfNoneMatch: true})
	if !errors.Is(err, sink.ErrPrecondition) {
		t.Fatalf("second IfNoneMatch Put = %v, want ErrPrecondition", err)
	}
	RequireContent(t, b, manifestKey, []byte(`{"revision":1}`))
	if st, err := b.Stat(ctx, manifestKey); err != nil || st.ETag != first.ETag {
		t.Fatalf("after a refused Put Stat = %+v, %v; want ETag %q", st, err, first.ETag)
	}
	// After a Delete the key is free again.
	if err := b.Delete(ctx, manifestKey); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutBytes(ctx, manifestKey, []byte(`{"revision":3}`), sink.PutOptions{IfNoneMatch: true}); err != nil {
		t.Fatalf("IfNoneMatch Put after Delete: %v", err)
	}
	RequireContent(t, b, manifestKey, []byte(`{"revision":3}`))
}

func testIfMatch(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	ctx := context.Background()
	v1 := MustPut(t, b, manifestKey, []byte(`{"revision":1}`))
	v2, err := b.PutBytes(ctx, manifestKey, []byte(`{"revision":2}`), sink.PutOptions{IfMatch: v1.ETag})
	if err != nil {
		t.Fatalf("IfMatch Put with the current ETag: %v", err)
	}
	if v2.ETag == v1.ETag || v2.ETag == "" {
		t.Fatalf("IfMatch Put gave ETag %q, the replaced object had %q", v2.ETag, v1.ETag)
	}
	RequireContent(t, b, manifestKey, []byte(`{"revision":2}`))

	// A stale ETag: the object is unchanged.
	_, err = b.PutBytes(ctx, manifestKey, []byte(`{"revision":"stale"}`), sink.PutOptions{IfMatch: v1.ETag})
	if !errors.Is(err, sink.ErrPrecondition) {
		t.Fatalf("IfMatch Put with a stale ETag = %v, want ErrPrecondition", err)
	}
	RequireContent(t, b, manifestKey, []byte(`{"revision":2}`))

	// The ETags Stat and List report are the ones IfMatch takes.
	st, err := b.Stat(ctx, manifestKey)
	if err != nil {
		t.Fatal(err)
	}
	v3, err := b.PutBytes(ctx, manifestKey, []byte(`{"revision":3}`), sink.PutOptions{IfMatch: st.ETag})
	if err != nil {
		t.Fatalf("IfMatch Put with Stat's ETag %q: %v", st.ETag, err)
	}
	as, err := b.List(ctx, "manifests/")
	if err != nil || len(as) != 1 {
		t.Fatalf("List = %+v, %v", as, err)
	}
	if as[0].ETag != v3.ETag {
		t.Fatalf("List ETag %q, Put gave %q", as[0].ETag, v3.ETag)
	}
	if _, err := b.PutBytes(ctx, manifestKey, []byte(`{"revision":4}`), sink.PutOptions{IfMatch: as[0].ETag}); err != nil {
		t.Fatalf("IfMatch Put with List's ETag %q: %v", as[0].ETag, err)
	}
	RequireContent(t, b, manifestKey, []byte(`{"revision":4}`))

	// No object: IfMatch fails and creates nothing.
	const other = "manifests/period=20240101T0100Z/manifest.json"
	_, err = b.PutBytes(ctx, other, []byte(`{}`), sink.PutOptions{IfMatch: v1.ETag})
	if !errors.Is(err, sink.ErrPrecondition) {
		t.Fatalf("IfMatch Put of a missing object = %v, want ErrPrecondition", err)
	}
	RequireMissing(t, b, other)
}

// race runs put from n goroutines at once and returns the index of the
// one that succeeded, failing t unless exactly one did and every other
// got ErrPrecondition.
func race(t *testing.T, n int, put func(i int) error) int {
	t.Helper()
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = put(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, sink.ErrPrecondition):
			t.Fatalf("writer %d: %v, want success or ErrPrecondition", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no writer succeeded: %v", errs)
	}
	return winner
}

func testConcurrentIfNoneMatch(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	const n = 8
	body := func(i int) []byte { return []byte(fmt.Sprintf(`{"writer":%d}`, i)) }
	for round := range 3 {
		key := fmt.Sprintf("manifests/period=20240101T%02d00Z/manifest.json", round)
		w := race(t, n, func(i int) error {
			_, err := b.PutBytes(context.Background(), key, body(i), sink.PutOptions{IfNoneMatch: true})
			return err
		})
		RequireContent(t, b, key, body(w))
	}
}

func testConcurrentIfMatch(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	const n = 8
	body := func(round, i int) []byte { return []byte(fmt.Sprintf(`{"round":%d,"writer":%d}`, round, i)) }
	cur := MustPut(t, b, manifestKey, []byte(`{"revision":0}`))
	for round := range 3 {
		var mu sync.Mutex
		var next sink.Attrs
		w := race(t, n, func(i int) error {
			a, err := b.PutBytes(context.Background(), manifestKey, body(round, i), sink.PutOptions{IfMatch: cur.ETag})
			if err == nil {
				mu.Lock()
				next = a
				mu.Unlock()
			}
			return err
		})
		RequireContent(t, b, manifestKey, body(round, w))
		cur = next
	}
}

// Package drivertest is the conformance suite of sink drivers: the
// contract in driver.Bucket's doc comments, as tests run through the
// portable sink.Bucket. Every driver's tests call Run (or RunHooks) with a
// function that opens a fresh, empty bucket. It also has helpers for tests
// that use a sink.
package drivertest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// LargeSize is the size of the large object the suite writes: above the
// S3 multipart threshold (8 MiB by default) and not a multiple of a part.
const LargeSize = 12<<20 + 12345

// Hooks are driver-specific checks the suite calls where only the driver
// can look.
type Hooks struct {
	// NoLeftovers, when set, is called after Puts that failed (a body that
	// fails mid-read, a cancelled context) on the bucket they failed on,
	// and fails t if the driver left anything the portable API does not
	// show (S3: a multipart upload in progress; a folder: a temporary
	// file).
	NoLeftovers func(t *testing.T, d driver.Bucket)
}

// Run runs the conformance suite. Each call of open must return a fresh,
// empty bucket (a new folder, a new bucket or prefix).
func Run(t *testing.T, open func(t *testing.T) driver.Bucket) {
	RunHooks(t, open, Hooks{})
}

// RunHooks is Run with driver-specific checks.
func RunHooks(t *testing.T, open func(t *testing.T) driver.Bucket, h Hooks) {
	if h.NoLeftovers == nil {
		h.NoLeftovers = func(*testing.T, driver.Bucket) {}
	}
	b := func(t *testing.T) (*sink.Bucket, driver.Bucket) {
		d := open(t)
		return sink.New(d), d
	}
	tests := []struct {
		name string
		run  func(t *testing.T, b *sink.Bucket, d driver.Bucket, h Hooks)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"IfNoneMatch", testIfNoneMatch},
		{"IfMatch", testIfMatch},
		{"ConcurrentIfNoneMatch", testConcurrentIfNoneMatch},
		{"ConcurrentIfMatch", testConcurrentIfMatch},
		{"List", testList},
		{"EscapedKeys", testEscapedKeys},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"BadKeys", testBadKeys},
		{"KeyLimits", testKeyLimits},
		{"Large", testLarge},
		{"Empty", testEmpty},
		{"PutFile", testPutFile},
		{"DeferredPut", testDeferredPut},
		{"CancelledPut", testCancelledPut},
		{"FailingBody", testFailingBody},
		{"RefusedPut", testRefusedPut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bk, d := b(t)
			tt.run(t, bk, d, h)
		})
	}
}

// MustPut stores data at key without conditions, failing t on any error.
func MustPut(t testing.TB, b *sink.Bucket, key string, data []byte) sink.Attrs {
	t.Helper()
	a, err := b.PutBytes(context.Background(), key, data, sink.PutOptions{ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatalf("PutBytes(%q): %v", key, err)
	}
	return a
}

// MustRead reads the whole object at key, failing t on any error.
func MustRead(t testing.TB, b *sink.Bucket, key string) []byte {
	t.Helper()
	data, _, err := b.ReadAll(context.Background(), key, 1<<30)
	if err != nil {
		t.Fatalf("ReadAll(%q): %v", key, err)
	}
	return data
}

// RequireMissing fails t unless Stat and Get of key give ErrNotFound and
// List does not show key.
func RequireMissing(t testing.TB, b *sink.Bucket, key string) {
	t.Helper()
	ctx := context.Background()
	if a, err := b.Stat(ctx, key); !errors.Is(err, sink.ErrNotFound) {
		t.Fatalf("Stat(%q) = %+v, %v; want ErrNotFound", key, a, err)
	}
	r, _, err := b.Get(ctx, key)
	if err == nil {
		r.Close()
		t.Fatalf("Get(%q) found an object, want ErrNotFound", key)
	}
	if !errors.Is(err, sink.ErrNotFound) {
		t.Fatalf("Get(%q) = %v, want ErrNotFound", key, err)
	}
	as, err := b.List(ctx, "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, a := range as {
		if a.Key == key {
			t.Fatalf("List shows %q (%d bytes), want it absent", key, a.Size)
		}
	}
}

// RequireContent fails t unless the object at key holds want.
func RequireContent(t testing.TB, b *sink.Bucket, key string, want []byte) {
	t.Helper()
	if got := MustRead(t, b, key); !bytes.Equal(got, want) {
		t.Fatalf("object %q holds %d bytes %.40q, want %d bytes %.40q", key, len(got), got, len(want), want)
	}
}

// Keys returns the keys of as.
func Keys(as []sink.Attrs) []string {
	keys := make([]string, 0, len(as))
	for _, a := range as {
		keys = append(keys, a.Key)
	}
	return keys
}

// Bytes returns n pseudo-random bytes from seed.
func Bytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// BadKeys are keys every bucket refuses with ErrBadKey, whatever its
// driver.
var BadKeys = []string{
	"", "/abs", "a/../b", "..", ".", "a/..", "a//b", "./a", "a/", "a/./b",
	"a b", "a\\b", "a\x00b", "é", "a?b", "a*b", "a+b", "a~b", "a:b", "%2F/\n",
}

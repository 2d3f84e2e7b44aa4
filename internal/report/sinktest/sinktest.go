// Package sinktest is the conformance suite every report.Sink passes: the
// contract in report.Sink's doc comments, as tests.
package sinktest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// LargeSize is the size of the large object Run writes: above the S3
// multipart threshold (8 MiB by default) and not a multiple of it.
const LargeSize = 12<<20 + 12345

// Run runs the conformance suite. Each call of open must return a fresh,
// empty sink (a new folder, a new bucket or prefix).
func Run(t *testing.T, open func(t *testing.T) report.Sink) {
	t.Run("WriteCommitOpen", func(t *testing.T) { testWriteCommitOpen(t, open(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, open(t)) })
	t.Run("InvisibleBeforeCommit", func(t *testing.T) { testInvisibleBeforeCommit(t, open(t)) })
	t.Run("Abort", func(t *testing.T) { testAbort(t, open(t)) })
	t.Run("CancelledWrite", func(t *testing.T) { testCancelledWrite(t, open(t)) })
	t.Run("List", func(t *testing.T) { testList(t, open(t)) })
	t.Run("EscapedKeys", func(t *testing.T) { testEscapedKeys(t, open(t)) })
	t.Run("BadKeys", func(t *testing.T) { testBadKeys(t, open(t)) })
	t.Run("Large", func(t *testing.T) { testLarge(t, open(t)) })
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t)) })
	t.Run("OpenMissing", func(t *testing.T) { testOpenMissing(t, open(t)) })
	t.Run("DoubleCommitAbort", func(t *testing.T) { testDoubleCommitAbort(t, open(t)) })
}

// Put writes data at key and commits it, failing t on any error.
func Put(t testing.TB, s report.Sink, key string, data []byte) {
	t.Helper()
	w, err := s.NewWriter(context.Background(), key, "application/octet-stream")
	if err != nil {
		t.Fatalf("NewWriter(%q): %v", key, err)
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Abort()
		t.Fatalf("Write(%q): %v", key, err)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit(%q): %v", key, err)
	}
}

// Get reads the whole object at key, failing t on any error.
func Get(t testing.TB, s report.Sink, key string) []byte {
	t.Helper()
	r, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("close %q: %v", key, err)
	}
	return b
}

// RequireMissing fails t unless Open(key) gives ErrNotFound and List does
// not show key.
func RequireMissing(t testing.TB, s report.Sink, key string) {
	t.Helper()
	r, err := s.Open(context.Background(), key)
	if err == nil {
		b, _ := io.ReadAll(r)
		r.Close()
		t.Fatalf("Open(%q) found an object of %d bytes, want ErrNotFound", key, len(b))
	}
	if !errors.Is(err, report.ErrNotFound) {
		t.Fatalf("Open(%q) = %v, want ErrNotFound", key, err)
	}
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, o := range infos {
		if o.Key == key {
			t.Fatalf("List shows %q (%d bytes), want it absent", key, o.Size)
		}
	}
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

func testWriteCommitOpen(t *testing.T, s report.Sink) {
	const key = "period=20240101T0000Z/agency=acme/summary.csv"
	data := []byte("currency,net_amount\nUSD,19.99\n")
	w, err := s.NewWriter(context.Background(), key, "text/csv")
	if err != nil {
		t.Fatal(err)
	}
	// Several small writes: the object is their concatenation.
	for _, chunk := range bytes.SplitAfter(data, []byte(",")) {
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(chunk))
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := Get(t, s, key); !bytes.Equal(got, data) {
		t.Fatalf("Open(%q) = %q, want %q", key, got, data)
	}
}

func testOverwrite(t *testing.T, s report.Sink) {
	const key = "a/b.json"
	Put(t, s, key, bytes.Repeat([]byte("long old content "), 100))
	Put(t, s, key, []byte("new"))
	if got := Get(t, s, key); string(got) != "new" {
		t.Fatalf("after overwrite Open = %q, want %q", got, "new")
	}
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != key || infos[0].Size != 3 {
		t.Fatalf("List = %+v, want one object %q of 3 bytes", infos, key)
	}
}

func testInvisibleBeforeCommit(t *testing.T, s report.Sink) {
	const key = "period=20240101T0000Z/manifest.json"
	w, err := s.NewWriter(context.Background(), key, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(`{"partial":`)); err != nil {
		t.Fatal(err)
	}
	RequireMissing(t, s, key)
	if _, err := w.Write([]byte(`true}`)); err != nil {
		t.Fatal(err)
	}
	RequireMissing(t, s, key)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := Get(t, s, key); string(got) != `{"partial":true}` {
		t.Fatalf("Open = %q", got)
	}
}

func testAbort(t *testing.T, s report.Sink) {
	ctx := context.Background()
	// A new key: nothing is left.
	w, err := s.NewWriter(ctx, "x/new.csv", "text/csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("discarded")); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	RequireMissing(t, s, "x/new.csv")

	// An existing key: the older object is intact.
	old := []byte("old object")
	Put(t, s, "x/old.csv", old)
	w, err = s.NewWriter(ctx, "x/old.csv", "text/csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("replacement that is never committed")); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if got := Get(t, s, "x/old.csv"); !bytes.Equal(got, old) {
		t.Fatalf("after Abort Open = %q, want the older %q", got, old)
	}
	infos, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != "x/old.csv" {
		t.Fatalf("after Abort List = %+v, want only x/old.csv", infos)
	}
}

func testCancelledWrite(t *testing.T, s report.Sink) {
	old := []byte("older object")
	Put(t, s, "c/old.bin", old)
	for _, key := range []string{"c/new.bin", "c/old.bin"} {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := s.NewWriter(ctx, key, "application/octet-stream")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(Bytes(1<<20, 1)); err != nil {
			t.Fatal(err)
		}
		cancel()
		// Later writes may fail or not; Commit must fail.
		_, _ = w.Write(Bytes(1<<20, 2))
		if err := w.Commit(); err == nil {
			t.Fatalf("Commit(%q) after the context was cancelled = nil, want an error", key)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort after a failed Commit = %v, want nil (no-op)", err)
		}
	}
	RequireMissing(t, s, "c/new.bin")
	if got := Get(t, s, "c/old.bin"); !bytes.Equal(got, old) {
		t.Fatalf("after a failed write Open = %d bytes, want the older %q", len(got), old)
	}
}

func testList(t *testing.T, s report.Sink) {
	ctx := context.Background()
	objects := map[string]int{
		"period=20240101T0100Z/manifest.json":              5,
		"period=20240101T0000Z/manifest.json":              3,
		"period=20240101T0000Z/agency=b/summary.parquet":   7,
		"period=20240101T0000Z/agency=a/summary.parquet":   11,
		"period=20240101T0000Z/agency=a/summary.csv":       2,
		"period=20240101T0000Z/agency=a-b/summary.parquet": 1,
		"period=20240101T0000Zx":                           4,
		"other/file":                                       9,
	}
	for k, n := range objects {
		Put(t, s, k, Bytes(n, uint64(n)))
	}
	// An uncommitted write is not listed.
	w, err := s.NewWriter(ctx, "period=20240101T0000Z/agency=a/pending.csv", "text/csv")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write([]byte("pending")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		prefix string
		want   []string
	}{
		{"period=20240101T0000Z/", []string{
			"period=20240101T0000Z/agency=a-b/summary.parquet",
			"period=20240101T0000Z/agency=a/summary.csv",
			"period=20240101T0000Z/agency=a/summary.parquet",
			"period=20240101T0000Z/agency=b/summary.parquet",
			"period=20240101T0000Z/manifest.json",
		}},
		{"period=20240101T0000Z/agency=a/", []string{
			"period=20240101T0000Z/agency=a/summary.csv",
			"period=20240101T0000Z/agency=a/summary.parquet",
		}},
		{"period=20240101T0000Z/agency=a", []string{
			"period=20240101T0000Z/agency=a-b/summary.parquet",
			"period=20240101T0000Z/agency=a/summary.csv",
			"period=20240101T0000Z/agency=a/summary.parquet",
		}},
		{"period=20240101T0", []string{
			"period=20240101T0000Z/agency=a-b/summary.parquet",
			"period=20240101T0000Z/agency=a/summary.csv",
			"period=20240101T0000Z/agency=a/summary.parquet",
			"period=20240101T0000Z/agency=b/summary.parquet",
			"period=20240101T0000Z/manifest.json",
			"period=20240101T0000Zx",
			"period=20240101T0100Z/manifest.json",
		}},
		{"", []string{
			"other/file",
			"period=20240101T0000Z/agency=a-b/summary.parquet",
			"period=20240101T0000Z/agency=a/summary.csv",
			"period=20240101T0000Z/agency=a/summary.parquet",
			"period=20240101T0000Z/agency=b/summary.parquet",
			"period=20240101T0000Z/manifest.json",
			"period=20240101T0000Zx",
			"period=20240101T0100Z/manifest.json",
		}},
		{"nothing/", nil},
		{"period=20240101T0000Z/agency=c/", nil},
	}
	for _, tt := range tests {
		infos, err := s.List(ctx, tt.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tt.prefix, err)
		}
		var got []string
		for _, o := range infos {
			got = append(got, o.Key)
			if int64(objects[o.Key]) != o.Size {
				t.Errorf("List(%q): %s has size %d, want %d", tt.prefix, o.Key, o.Size, objects[o.Key])
			}
			if o.Modified.IsZero() {
				t.Errorf("List(%q): %s has no modification time", tt.prefix, o.Key)
			}
		}
		if !equal(got, tt.want) {
			t.Errorf("List(%q) = %q\nwant %q", tt.prefix, got, tt.want)
		}
	}
	for _, prefix := range []string{"/abs", "a//b", "../", "a/../", "a b"} {
		if _, err := s.List(ctx, prefix); !errors.Is(err, report.ErrBadKey) {
			t.Errorf("List(%q) error = %v, want ErrBadKey", prefix, err)
		}
	}
}

func testEscapedKeys(t *testing.T, s report.Sink) {
	keys := []string{
		"period=20240101T0000Z/agency=..%2Fx/summary.csv",
		"agency=a%2Fb",
		"agency=%25",
		"agency=%C3%A9",
		"agency=%2E%2E/x",
		"..x/...",
	}
	for _, k := range keys {
		Put(t, s, k, []byte(k))
		if got := Get(t, s, k); string(got) != k {
			t.Errorf("Open(%q) = %q, want the key itself", k, got)
		}
		infos, err := s.List(context.Background(), k)
		if err != nil {
			t.Fatalf("List(%q): %v", k, err)
		}
		if len(infos) != 1 || infos[0].Key != k {
			t.Errorf("List(%q) = %+v, want just that key", k, infos)
		}
	}
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(keys) {
		t.Errorf("List(\"\") has %d objects, want %d: %+v", len(infos), len(keys), infos)
	}
}

// BadKeys are keys every sink refuses with ErrBadKey.
var BadKeys = []string{
	"", "/abs", "a/../b", "..", ".", "a/..", "a//b", "./a", "a/", "a/./b",
	"a b", "a\\b", "a\x00b", "é", "a?b", "a*b", "a+b", "a~b", "a:b", "%2F/\n",
}

func testBadKeys(t *testing.T, s report.Sink) {
	ctx := context.Background()
	for _, k := range BadKeys {
		w, err := s.NewWriter(ctx, k, "text/plain")
		if !errors.Is(err, report.ErrBadKey) {
			if err == nil {
				_ = w.Abort()
			}
			t.Errorf("NewWriter(%q) error = %v, want ErrBadKey", k, err)
		}
		if _, err := s.Open(ctx, k); !errors.Is(err, report.ErrBadKey) {
			t.Errorf("Open(%q) error = %v, want ErrBadKey", k, err)
		}
	}
	infos, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 0 {
		t.Errorf("after refused keys List = %+v, want empty", infos)
	}
}

func testLarge(t *testing.T, s report.Sink) {
	const key = "period=20240101T0000Z/agency=big/transactions.parquet"
	data := Bytes(LargeSize, 42)
	want := sha256.Sum256(data)
	w, err := s.NewWriter(context.Background(), key, "application/vnd.apache.parquet")
	if err != nil {
		t.Fatal(err)
	}
	// Uneven writes, as an encoder would make.
	for rest, i := data, 0; len(rest) > 0; i++ {
		n := min(len(rest), 1000+i*7919%300000)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	if n != LargeSize || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("read back %d bytes, sha256 %x; want %d bytes, %x", n, h.Sum(nil), LargeSize, want)
	}
	infos, err := s.List(context.Background(), "period=20240101T0000Z/agency=big/")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Size != LargeSize {
		t.Fatalf("List = %+v, want one object of %d bytes", infos, LargeSize)
	}
}

func testEmpty(t *testing.T, s report.Sink) {
	Put(t, s, "period=20240101T0000Z/rejects.jsonl", nil)
	if got := Get(t, s, "period=20240101T0000Z/rejects.jsonl"); len(got) != 0 {
		t.Fatalf("empty object read back as %d bytes", len(got))
	}
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Size != 0 {
		t.Fatalf("List = %+v, want one empty object", infos)
	}
}

func testOpenMissing(t *testing.T, s report.Sink) {
	Put(t, s, "a/present", []byte("x"))
	for _, k := range []string{"missing", "a/missing", "b/c/missing", "a/present/below"} {
		_, err := s.Open(context.Background(), k)
		if !errors.Is(err, report.ErrNotFound) {
			t.Errorf("Open(%q) error = %v, want ErrNotFound", k, err)
		}
	}
}

func testDoubleCommitAbort(t *testing.T, s report.Sink) {
	ctx := context.Background()
	w, err := s.NewWriter(ctx, "d/committed", "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Errorf("second Commit = %v, want nil", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Commit = %v, want nil", err)
	}
	if _, err := w.Write([]byte("more")); err == nil {
		t.Errorf("Write after Commit = nil error, want an error")
	}
	if got := Get(t, s, "d/committed"); string(got) != "one" {
		t.Errorf("Open after Commit, Commit, Abort = %q, want %q", got, "one")
	}

	w, err = s.NewWriter(ctx, "d/aborted", "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("second Abort = %v, want nil", err)
	}
	if err := w.Commit(); err != nil {
		t.Errorf("Commit after Abort = %v, want nil (no-op)", err)
	}
	RequireMissing(t, s, "d/aborted")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package drivertest

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// requireAttrs fails t unless a describes an object of key with size
// bytes, an ETag and a plausible modification time.
func requireAttrs(t testing.TB, what string, a sink.Attrs, key string, size int64) {
	t.Helper()
	if a.Key != key || a.Size != size || a.ETag == "" {
		t.Fatalf("%s = %+v, want key %q, %d bytes, an ETag", what, a, key, size)
	}
	if a.Modified.Before(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) || a.Modified.Location() != time.UTC {
		t.Fatalf("%s: modification time %v, want a recent UTC time", what, a.Modified)
	}
}

func testPutGet(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	ctx := context.Background()
	const key = "summary/period=20240101T0000Z/summary-0123456789abcdef.csv"
	data := []byte("currency,net_amount\nUSD,19.99\n")
	put, err := b.PutBytes(ctx, key, data, sink.PutOptions{ContentType: "text/csv"})
	if err != nil {
		t.Fatal(err)
	}
	requireAttrs(t, "Put", put, key, int64(len(data)))

	st, err := b.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	requireAttrs(t, "Stat", st, key, int64(len(data)))

	r, got, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	requireAttrs(t, "Get", got, key, int64(len(data)))
	if string(body) != string(data) {
		t.Fatalf("Get read %q, want %q", body, data)
	}

	as, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 {
		t.Fatalf("List = %+v, want one object", as)
	}
	requireAttrs(t, "List", as[0], key, int64(len(data)))
	// One version of one object has one ETag, whichever call reports it.
	for what, e := range map[string]string{"Stat": st.ETag, "Get": got.ETag, "List": as[0].ETag} {
		if e != put.ETag {
			t.Errorf("%s ETag %q, Put's %q: want the same", what, e, put.ETag)
		}
	}

	if _, _, err := b.ReadAll(ctx, key, int64(len(data))-1); !errors.Is(err, sink.ErrTooLarge) {
		t.Errorf("ReadAll with a limit below the size = %v, want ErrTooLarge", err)
	}
	all, a, err := b.ReadAll(ctx, key, int64(len(data)))
	if err != nil || string(all) != string(data) || a.ETag != put.ETag {
		t.Errorf("ReadAll = %q, %+v, %v; want the object", all, a, err)
	}
}

func testOverwrite(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	const key = "a/b.json"
	old := MustPut(t, b, key, []byte(strings.Repeat("long old content ", 100)))
	cur := MustPut(t, b, key, []byte("new"))
	RequireContent(t, b, key, []byte("new"))
	if cur.ETag == old.ETag {
		t.Errorf("overwrite kept the ETag %q", cur.ETag)
	}
	as, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Key != key || as[0].Size != 3 || as[0].ETag != cur.ETag {
		t.Fatalf("List = %+v, want one object %q of 3 bytes with ETag %q", as, key, cur.ETag)
	}
}

func testList(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
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
	etags := map[string]string{}
	for k, n := range objects {
		etags[k] = MustPut(t, b, k, Bytes(n, uint64(n))).ETag
	}
	all := slices.Sorted(func(yield func(string) bool) {
		for k := range objects {
			if !yield(k) {
				return
			}
		}
	})
	with := func(prefix string) []string {
		var out []string
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		return out
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"period=20240101T0000Z/", with("period=20240101T0000Z/")},
		{"period=20240101T0000Z/agency=a/", with("period=20240101T0000Z/agency=a/")},
		{"period=20240101T0000Z/agency=a", with("period=20240101T0000Z/agency=a")}, // mid-segment: a-b too
		{"period=20240101T0", with("period=20240101T0")},
		{"period=20240101T0000Z", with("period=20240101T0000Z")}, // the folder and the file beside it
		{"period=20240101T0000Z/manifest.json", []string{"period=20240101T0000Z/manifest.json"}},
		{"nothing/", nil},
		{"period=20240101T0000Z/agency=c/", nil},
		{"period=20240101T0000Z/agency=a/summary.csv/", nil},
	}
	if len(tests[3].want) != 3 || len(tests[5].want) != 6 {
		t.Fatalf("bad test table: %q %q", tests[3].want, tests[5].want)
	}
	for _, tt := range tests {
		as, err := b.List(ctx, tt.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tt.prefix, err)
		}
		if got := Keys(as); !slices.Equal(got, tt.want) {
			t.Errorf("List(%q) = %q\nwant %q", tt.prefix, got, tt.want)
		}
		for _, a := range as {
			requireAttrs(t, "List("+tt.prefix+")", a, a.Key, int64(objects[a.Key]))
			if a.ETag != etags[a.Key] {
				t.Errorf("List(%q): %s has ETag %q, Put gave %q", tt.prefix, a.Key, a.ETag, etags[a.Key])
			}
		}
	}
	// ListAfter: List less the keys at or before after, whether the
	// driver lists from a key on (driver.AfterLister) or not.
	for _, tt := range []struct{ prefix, after string }{
		{"", ""}, {"", "other/file"}, {"", "period=20240101T0000Z/agency=a/summary.parquet"}, {"", "zzz"},
		{"period=", "period=20240101T0000Z"}, {"period=", "period=20240101T0000Z/manifest.json"},
		{"period=", "period=20240101T0000Zx"}, {"period=", "a"}, {"period=", "period=20240101T0100Z"},
		{"period=20240101T0000Z/", "period=20240101T0000Z/agency=a-b"}, {"period=20240101T0000Z/agency=", "period=20240101T0000Z/agency=a/"},
	} {
		var want []string
		for _, k := range with(tt.prefix) {
			if k > tt.after {
				want = append(want, k)
			}
		}
		as, err := b.ListAfter(ctx, tt.prefix, tt.after)
		if err != nil {
			t.Fatalf("ListAfter(%q, %q): %v", tt.prefix, tt.after, err)
		}
		if got := Keys(as); !slices.Equal(got, want) {
			t.Errorf("ListAfter(%q, %q) = %q\nwant %q", tt.prefix, tt.after, got, want)
		}
	}
	for _, prefix := range []string{"/abs", "a//b", "../", "a/../", "a b", "é"} {
		if _, err := b.List(ctx, prefix); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("List(%q) error = %v, want ErrBadKey", prefix, err)
		}
	}
}

// testEscapedKeys: keys as escaping makes them (agency ids with '/',
// '%', non-ASCII) are ordinary keys. Keys with a segment that starts with
// '.' are stored and read back, but a driver may leave them out of List
// (a folder hides dotfiles).
func testEscapedKeys(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	listed := []string{
		"agencies/agency=..%2Fx/period=20240101T0000Z/summary.csv",
		"agency=a%2Fb",
		"agency=%25",
		"agency=%C3%A9",
		"agency=%2E%2E/x",
		"x..",
		"a/x.../y..",
	}
	for _, k := range listed {
		MustPut(t, b, k, []byte(k))
		RequireContent(t, b, k, []byte(k))
		as, err := b.List(context.Background(), k)
		if err != nil {
			t.Fatalf("List(%q): %v", k, err)
		}
		if len(as) != 1 || as[0].Key != k {
			t.Errorf("List(%q) = %+v, want just that key", k, as)
		}
	}
	for _, k := range []string{"..x/...", "p/.hidden"} {
		MustPut(t, b, k, []byte(k))
		RequireContent(t, b, k, []byte(k))
	}
}

func testMissing(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	MustPut(t, b, "a/present", []byte("x"))
	for _, k := range []string{"missing", "a/missing", "b/c/missing", "a/present/below", "a"} {
		RequireMissing(t, b, k)
		if _, _, err := b.ReadAll(context.Background(), k, 10); !errors.Is(err, sink.ErrNotFound) {
			t.Errorf("ReadAll(%q) = %v, want ErrNotFound", k, err)
		}
	}
}

func testDelete(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	ctx := context.Background()
	for _, k := range []string{"p/a/1", "p/a/2", "p/b", "q"} {
		MustPut(t, b, k, []byte(k))
	}
	if err := b.Delete(ctx, "p/a/1"); err != nil {
		t.Fatal(err)
	}
	RequireMissing(t, b, "p/a/1")
	RequireContent(t, b, "p/a/2", []byte("p/a/2"))
	for _, k := range []string{"p/a/1", "nothing/here", "p/a", "p/b/below"} {
		if err := b.Delete(ctx, k); err != nil {
			t.Errorf("Delete(%q) of a missing object = %v, want nil", k, err)
		}
	}
	if err := b.Delete(ctx, "p/a/2"); err != nil {
		t.Fatal(err)
	}
	as, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := Keys(as); !slices.Equal(got, []string{"p/b", "q"}) {
		t.Fatalf("after deletes List = %q, want [p/b q]", got)
	}
	// The key can be used again, and a key where a "folder" was.
	MustPut(t, b, "p/a/1", []byte("again"))
	RequireContent(t, b, "p/a/1", []byte("again"))
	if err := b.Delete(ctx, "p/a/1"); err != nil {
		t.Fatal(err)
	}
	MustPut(t, b, "p/a", []byte("file where a folder was"))
	RequireContent(t, b, "p/a", []byte("file where a folder was"))
}

func testBadKeys(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	ctx := context.Background()
	for _, k := range BadKeys {
		if _, err := b.PutBytes(ctx, k, []byte("x"), sink.PutOptions{}); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("Put(%q) = %v, want ErrBadKey", k, err)
		}
		if _, err := b.PutBytes(ctx, k, []byte("x"), sink.PutOptions{IfNoneMatch: true}); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("conditional Put(%q) = %v, want ErrBadKey", k, err)
		}
		if _, _, err := b.Get(ctx, k); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("Get(%q) = %v, want ErrBadKey", k, err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("Stat(%q) = %v, want ErrBadKey", k, err)
		}
		if err := b.Delete(ctx, k); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("Delete(%q) = %v, want ErrBadKey", k, err)
		}
	}
	as, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 0 {
		t.Errorf("after refused keys List = %+v, want empty", as)
	}
}

// longKey returns a valid key of exactly n bytes whose segments are at
// most seg bytes.
func longKey(n, seg int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		if sb.Len() > 0 {
			sb.WriteByte('/')
		}
		s := min(seg, n-sb.Len())
		sb.WriteString(strings.Repeat(string(rune('a'+i%26)), s))
	}
	return sb.String()
}

// testKeyLimits: keys at the driver's limits are stored; one byte more is
// refused before it reaches the driver. Segments at the limit are tested
// up to 200 bytes when the driver's is larger (S3's is its key length,
// which S3-compatible servers on a file system cannot hold in one name).
func testKeyLimits(t *testing.T, b *sink.Bucket, d driver.Bucket, _ Hooks) {
	ctx := context.Background()
	maxKey, maxSeg := d.MaxKeyLen(), d.MaxSegmentLen()
	if maxKey < 200 || maxSeg < 1 || maxSeg > maxKey {
		t.Fatalf("MaxKeyLen %d, MaxSegmentLen %d: implausible", maxKey, maxSeg)
	}
	seg := min(maxSeg, 200)
	ok := []string{longKey(maxKey, seg), longKey(seg, seg)}
	if maxSeg <= 255 {
		ok = append(ok, "x/"+strings.Repeat("s", maxSeg))
	}
	for _, k := range ok {
		if err := b.CheckKey(k); err != nil {
			t.Fatalf("CheckKey of %d bytes: %v", len(k), err)
		}
		MustPut(t, b, k, []byte("at the limit"))
		RequireContent(t, b, k, []byte("at the limit"))
		as, err := b.List(ctx, k)
		if err != nil || len(as) != 1 || as[0].Key != k {
			t.Fatalf("List(key of %d bytes) = %d objects, %v; want it", len(k), len(as), err)
		}
		if err := b.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		RequireMissing(t, b, k)
	}
	bad := []string{longKey(maxKey+1, seg)}
	if maxSeg < maxKey {
		bad = append(bad, "x/"+strings.Repeat("s", maxSeg+1))
	}
	for _, k := range bad {
		_, err := b.PutBytes(ctx, k, []byte("x"), sink.PutOptions{})
		if !errors.Is(err, sink.ErrBadKey) {
			t.Fatalf("Put of a key of %d bytes = %v, want ErrBadKey", len(k), err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, sink.ErrBadKey) {
			t.Fatalf("Stat of a key of %d bytes = %v, want ErrBadKey", len(k), err)
		}
	}
	as, err := b.List(ctx, "")
	if err != nil || len(as) != 0 {
		t.Fatalf("List = %+v, %v; want empty", as, err)
	}
}

func testLarge(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	ctx := context.Background()
	const key = "transactions/period=20240101T0000Z/transactions-0123456789abcdef.parquet"
	data := Bytes(LargeSize, 42)
	want := sha256.Sum256(data)
	path := filepath.Join(t.TempDir(), "large.parquet")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	put, err := b.PutFile(ctx, key, path, sink.PutOptions{ContentType: "application/vnd.apache.parquet"})
	if err != nil {
		t.Fatal(err)
	}
	requireAttrs(t, "PutFile", put, key, LargeSize)
	r, a, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	requireAttrs(t, "Get", a, key, LargeSize)
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	if n != LargeSize || [32]byte(h.Sum(nil)) != want {
		t.Fatalf("read back %d bytes, sha256 %x; want %d bytes, %x", n, h.Sum(nil), LargeSize, want)
	}
	as, err := b.List(ctx, "transactions/")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Size != LargeSize || as[0].ETag != put.ETag {
		t.Fatalf("List = %+v, want one object of %d bytes, ETag %q", as, LargeSize, put.ETag)
	}
}

func testEmpty(t *testing.T, b *sink.Bucket, _ driver.Bucket, _ Hooks) {
	const key = "rejects/period=20240101T0000Z/rejects-e3b0c44298fc1c14.jsonl"
	put := MustPut(t, b, key, nil)
	requireAttrs(t, "Put", put, key, 0)
	if got := MustRead(t, b, key); len(got) != 0 {
		t.Fatalf("empty object read back as %d bytes", len(got))
	}
	as, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Size != 0 {
		t.Fatalf("List = %+v, want one empty object", as)
	}
	if _, err := b.Put(context.Background(), "rejects/nil", nil, 0, sink.PutOptions{}); err != nil {
		t.Fatalf("Put of a nil body of size 0: %v", err)
	}
	RequireContent(t, b, "rejects/nil", nil)
}

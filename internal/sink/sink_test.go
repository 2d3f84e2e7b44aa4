package sink_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

// recorder is a driver that counts the calls that reach it and keeps the
// last Put's body; what Get returns is set by the test. It stands in for
// what no real driver does on purpose (return fewer bytes than its
// Attrs say) and lets a test see what the portable layer hands down.
type recorder struct {
	calls   int
	body    []byte            // what the last Put read
	readAt  bool              // the last Put's body was an io.ReaderAt
	get     []byte            // what Get returns
	getSize int64             // the size Get claims
	opts    driver.PutOptions // the last Put's
}

var _ driver.Bucket = (*recorder)(nil)

func (r *recorder) Put(_ context.Context, key string, body io.ReadSeeker, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	r.calls++
	r.opts = opts
	_, r.readAt = body.(io.ReaderAt)
	// Read it twice, as a retrying driver does.
	for range 2 {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return driver.Attrs{}, err
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return driver.Attrs{}, err
		}
		r.body = b
	}
	return driver.Attrs{Key: key, Size: size, ETag: "e", Modified: time.Now().UTC()}, nil
}

func (r *recorder) Get(_ context.Context, key string) (io.ReadCloser, driver.Attrs, error) {
	r.calls++
	return io.NopCloser(bytes.NewReader(r.get)), driver.Attrs{Key: key, Size: r.getSize, ETag: "e"}, nil
}

func (r *recorder) Stat(context.Context, string) (driver.Attrs, error) {
	r.calls++
	return driver.Attrs{}, driver.ErrNotFound
}

func (r *recorder) List(context.Context, string) ([]driver.Attrs, error) {
	r.calls++
	return nil, nil
}

func (r *recorder) Delete(context.Context, string) error { r.calls++; return nil }
func (r *recorder) MaxKeyLen() int                       { return 100 }
func (r *recorder) MaxSegmentLen() int                   { return 20 }
func (r *recorder) String() string                       { return "rec://b" }

func TestBadKeyNeverReachesDriver(t *testing.T) {
	r := &recorder{}
	b := sink.New(r)
	ctx := context.Background()
	keys := append([]string{strings.Repeat("a", 21), strings.Repeat("abcdefghi/", 10) + "x"}, drivertest.BadKeys...)
	for _, k := range keys {
		errs := map[string]error{}
		_, errs["Put"] = b.PutBytes(ctx, k, []byte("x"), sink.PutOptions{})
		_, errs["PutFile"] = b.PutFile(ctx, k, "/nonexistent/file", sink.PutOptions{})
		_, _, errs["Get"] = b.Get(ctx, k)
		_, _, errs["ReadAll"] = b.ReadAll(ctx, k, 10)
		_, errs["Stat"] = b.Stat(ctx, k)
		errs["Delete"] = b.Delete(ctx, k)
		errs["CheckKey"] = b.CheckKey(k)
		for op, err := range errs {
			if !errors.Is(err, sink.ErrBadKey) {
				t.Errorf("%s(%q) = %v, want ErrBadKey", op, k, err)
			}
		}
	}
	for _, p := range []string{"/a", "a//", "../", "a b"} {
		if _, err := b.List(ctx, p); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("List(%q) = %v, want ErrBadKey", p, err)
		}
	}
	if r.calls != 0 {
		t.Fatalf("%d calls reached the driver", r.calls)
	}
	// The limits are named.
	err := b.CheckKey(strings.Repeat("a", 21))
	if err == nil || !strings.Contains(err.Error(), "20") || !strings.Contains(err.Error(), "rec://b") {
		t.Errorf("segment too long: %v, want the limit and the bucket named", err)
	}
	err = b.CheckKey(strings.Repeat("abcdefghi/", 10) + "x")
	if err == nil || !strings.Contains(err.Error(), "100") {
		t.Errorf("key too long: %v, want the limit named", err)
	}
}

func TestErrorsNameObject(t *testing.T) {
	fs, err := filesink.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	b := sink.New(fs)
	ctx := context.Background()
	const key = "manifests/period=20240101T0000Z/manifest.json"
	url := "file://" + fs.Dir() + "/" + key
	if b.URL(key) != url {
		t.Fatalf("URL = %q, want %q", b.URL(key), url)
	}
	_, _, err = b.Get(ctx, key)
	if !errors.Is(err, sink.ErrNotFound) || !strings.Contains(err.Error(), url) {
		t.Errorf("Get of a missing object = %v, want ErrNotFound naming %s", err, url)
	}
	drivertest.MustPut(t, b, key, []byte("{}"))
	_, err = b.PutBytes(ctx, key, []byte("{}"), sink.PutOptions{IfNoneMatch: true})
	if !errors.Is(err, sink.ErrPrecondition) || !strings.Contains(err.Error(), url) {
		t.Errorf("IfNoneMatch Put of an existing object = %v, want ErrPrecondition naming %s", err, url)
	}
	_, err = b.PutBytes(ctx, "a//b", nil, sink.PutOptions{})
	if !errors.Is(err, sink.ErrBadKey) || !strings.Contains(err.Error(), strconv.Quote("a//b")) || !strings.Contains(err.Error(), b.String()) {
		t.Errorf("Put of a bad key = %v, want ErrBadKey naming the key and the bucket", err)
	}
}

func TestPutBodyView(t *testing.T) {
	ctx := context.Background()
	data := []byte("0123456789")
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := struct{ io.ReadSeeker }{bytes.NewReader(data)} // no ReaderAt
	plain.Seek(3, io.SeekStart)
	at := bytes.NewReader(data)
	at.Seek(3, io.SeekStart)
	tests := []struct {
		name   string
		put    func(b *sink.Bucket) error
		want   string
		readAt bool
	}{
		{"Plain", func(b *sink.Bucket) error { _, err := b.Put(ctx, "k", plain, 7, sink.PutOptions{}); return err }, "3456789", false},
		{"ReaderAt", func(b *sink.Bucket) error { _, err := b.Put(ctx, "k", at, 7, sink.PutOptions{}); return err }, "3456789", true},
		{"Bytes", func(b *sink.Bucket) error { _, err := b.PutBytes(ctx, "k", data, sink.PutOptions{}); return err }, "0123456789", true},
		{"File", func(b *sink.Bucket) error { _, err := b.PutFile(ctx, "k", file, sink.PutOptions{}); return err }, "0123456789", true},
	}
	for _, tt := range tests {
		r := &recorder{}
		if err := tt.put(sink.New(r)); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(r.body) != tt.want || r.readAt != tt.readAt {
			t.Errorf("%s: driver read %q (ReaderAt %v), want %q (%v)", tt.name, r.body, r.readAt, tt.want, tt.readAt)
		}
	}
	b := sink.New(&recorder{})
	if _, err := b.PutFile(ctx, "k", filepath.Dir(file), sink.PutOptions{}); err == nil {
		t.Error("PutFile of a folder succeeded")
	}
	if _, err := b.PutFile(ctx, "k", file+".missing", sink.PutOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("PutFile of a missing file = %v, want fs.ErrNotExist", err)
	}
}

// TestGetChecksSize: an object that ends before its size, or goes on
// after it, is a read error, not a short or long object.
func TestGetChecksSize(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		body string
		size int64
		ok   bool
	}{{"12345", 5, true}, {"123", 5, false}, {"1234567", 5, false}, {"", 0, true}} {
		b := sink.New(&recorder{get: []byte(tt.body), getSize: tt.size})
		data, _, err := b.ReadAll(ctx, "k", 100)
		if tt.ok != (err == nil) || (err == nil && string(data) != tt.body) {
			t.Errorf("body %q of size %d: ReadAll = %q, %v; want ok=%v", tt.body, tt.size, data, err, tt.ok)
		}
		if tt.size > int64(len(tt.body)) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("short body: %v, want io.ErrUnexpectedEOF", err)
		}
	}
}

func TestDiscard(t *testing.T) {
	b := sink.Discard()
	ctx := context.Background()
	a, err := b.PutBytes(ctx, "summary/x.parquet", []byte("data"), sink.PutOptions{IfNoneMatch: true})
	if err != nil || a.ETag != sink.DiscardETag || a.Size != 4 || a.Key != "summary/x.parquet" {
		t.Fatalf("Put = %+v, %v", a, err)
	}
	// Nothing is kept, so every conditional Put succeeds.
	if _, err := b.PutBytes(ctx, "summary/x.parquet", nil, sink.PutOptions{IfMatch: "other"}); err != nil {
		t.Fatalf("IfMatch Put = %v", err)
	}
	if _, err := b.Stat(ctx, "summary/x.parquet"); !errors.Is(err, sink.ErrNotFound) {
		t.Errorf("Stat = %v, want ErrNotFound", err)
	}
	if _, _, err := b.Get(ctx, "summary/x.parquet"); !errors.Is(err, sink.ErrNotFound) {
		t.Errorf("Get = %v, want ErrNotFound", err)
	}
	if as, err := b.List(ctx, ""); err != nil || len(as) != 0 {
		t.Errorf("List = %v, %v", as, err)
	}
	if err := b.Delete(ctx, "summary/x.parquet"); err != nil {
		t.Errorf("Delete = %v", err)
	}
	for _, k := range []string{"a//b", strings.Repeat("s", 256), strings.Repeat("abcdefghi/", 103)} {
		if _, err := b.PutBytes(ctx, k, nil, sink.PutOptions{}); !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("Put of %d bytes = %v, want ErrBadKey", len(k), err)
		}
	}
	if b.URL("k") != "discard:/k" || b.String() != "discard:" {
		t.Errorf("URL %q, String %q", b.URL("k"), b.String())
	}
}

// syncRecorder is a recorder that can Sync (driver.Syncer).
type syncRecorder struct {
	recorder
	syncs int
}

func (r *syncRecorder) Sync(context.Context) error { r.syncs++; return nil }

// TestDeferOnlyToSyncers: PutOptions.Defer reaches a driver only when it
// is a driver.Syncer and the Put is unconditional, so that a driver (or a
// wrapper of one) that cannot Sync stores every object durably; Sync is a
// no-op without one.
func TestDeferOnlyToSyncers(t *testing.T) {
	ctx := context.Background()
	plain, syncer := &recorder{}, &syncRecorder{}
	for _, tc := range []struct {
		name string
		d    driver.Bucket
		last func() driver.PutOptions
		opts sink.PutOptions
		want bool
	}{
		{"plain driver", plain, func() driver.PutOptions { return plain.opts }, sink.PutOptions{Defer: true}, false},
		{"syncer", syncer, func() driver.PutOptions { return syncer.opts }, sink.PutOptions{Defer: true}, true},
		{"syncer, IfNoneMatch", syncer, func() driver.PutOptions { return syncer.opts }, sink.PutOptions{Defer: true, IfNoneMatch: true}, false},
		{"syncer, IfMatch", syncer, func() driver.PutOptions { return syncer.opts }, sink.PutOptions{Defer: true, IfMatch: "e"}, false},
		{"syncer, not deferred", syncer, func() driver.PutOptions { return syncer.opts }, sink.PutOptions{}, false},
	} {
		b := sink.New(tc.d)
		if _, err := b.PutBytes(ctx, "k", []byte("x"), tc.opts); err != nil {
			t.Fatal(err)
		}
		if got := tc.last().Defer; got != tc.want {
			t.Errorf("%s: the driver got Defer %v, want %v", tc.name, got, tc.want)
		}
		if err := b.Sync(ctx); err != nil {
			t.Errorf("%s: Sync: %v", tc.name, err)
		}
	}
	if syncer.syncs != 4 {
		t.Errorf("the Syncer was synced %d times, want 4", syncer.syncs)
	}
}

// TestListAfterFallback: over a driver that cannot list from a key on
// (no driver.AfterLister), ListAfter is List less the keys at or before
// after, as the drivers that can give it (drivertest's List case).
func TestListAfterFallback(t *testing.T) {
	fs, err := filesink.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := struct{ driver.Bucket }{fs} // hides ListAfter
	if _, ok := driver.Bucket(plain).(driver.AfterLister); ok {
		t.Fatal("the wrapper still lists from a key on")
	}
	b := sink.New(plain)
	ctx := context.Background()
	for _, k := range []string{"m/p=1/x", "m/p=2/x", "m/p=2/y", "m/p=3/x", "n/z"} {
		drivertest.MustPut(t, b, k, []byte(k))
	}
	for after, want := range map[string]string{"": "m/p=1/x m/p=2/x m/p=2/y m/p=3/x", "m/p=2": "m/p=2/x m/p=2/y m/p=3/x",
		"m/p=2/x": "m/p=2/y m/p=3/x", "m/p=3/x": "", "a": "m/p=1/x m/p=2/x m/p=2/y m/p=3/x"} {
		as, err := b.ListAfter(ctx, "m/", after)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(drivertest.Keys(as), " "); got != want {
			t.Errorf("ListAfter(m/, %q) = %q, want %q", after, got, want)
		}
	}
	if _, err := b.ListAfter(ctx, "a//b", ""); !errors.Is(err, sink.ErrBadKey) {
		t.Errorf("ListAfter of a bad prefix: %v, want ErrBadKey", err)
	}
}

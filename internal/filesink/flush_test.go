package filesink

import (
	"context"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/sink"
)

// TestFlushInBackground: deferred Puts start a flush of DIR's file system
// once flushEvery bytes were written since the last one, one at a time,
// on a goroutine of its own; durable Puts do not count; Close waits for
// the running flush.
func TestFlushInBackground(t *testing.T) {
	ctx := context.Background()
	s := newSink(t)
	s.flush.usable = func() bool { return true } // whatever the test's folder is on
	b := sink.New(s)
	oldEvery, oldFlush := flushEvery, flushFilesystem
	t.Cleanup(func() { flushEvery, flushFilesystem = oldEvery, oldFlush })
	flushEvery = 10
	started := make(chan string, 10)
	release := make(chan struct{})
	flushFilesystem = func(dir string) {
		started <- dir
		<-release
		oldFlush(dir)
	}
	put := func(key string, defer_ bool) {
		t.Helper()
		if _, err := b.PutBytes(ctx, key, []byte("123456"), sink.PutOptions{Defer: defer_}); err != nil {
			t.Fatal(err)
		}
	}
	noFlush := func(why string) {
		t.Helper()
		select {
		case <-started:
			t.Fatalf("a flush started %s", why)
		case <-time.After(50 * time.Millisecond):
		}
	}

	put("a/1.csv", false)
	put("a/2.csv", false)
	noFlush("after durable Puts only")
	put("a/3.csv", true)
	noFlush("after 6 deferred bytes")
	put("a/4.csv", true) // 12 bytes
	select {
	case dir := <-started:
		if dir != s.Dir() {
			t.Errorf("flushed %q, want the sink's folder %q", dir, s.Dir())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no flush after 12 deferred bytes")
	}
	put("a/5.csv", true)
	put("a/6.csv", true) // 12 more, while the first flush runs
	noFlush("while one runs")

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a flush ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestNoFlushWithoutSyncfs: where syncfs is not trusted (Sync fsyncs
// each path there), deferred Puts start no flush.
func TestNoFlushWithoutSyncfs(t *testing.T) {
	s := newSink(t)
	s.flush.usable = func() bool { return false }
	oldEvery, oldFlush := flushEvery, flushFilesystem
	t.Cleanup(func() { flushEvery, flushFilesystem = oldEvery, oldFlush })
	flushEvery = 1
	flushed := 0
	flushFilesystem = func(string) { flushed++ }
	for _, k := range []string{"a/1.csv", "a/2.csv", "b/3.csv"} {
		if _, err := sink.New(s).PutBytes(context.Background(), k, []byte("123456"), sink.PutOptions{Defer: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if flushed != 0 {
		t.Errorf("%d flushes, want none", flushed)
	}
}

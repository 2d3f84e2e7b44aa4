package filesink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
)

// syncLog records the driver's fsyncs (paths relative to the sink's
// folder) and syncfs calls, and makes syncfs answer fsErr (nil: the real
// one).
type syncLog struct {
	mu      sync.Mutex
	dir     string
	fsyncs  []string
	syncfs  int
	fsErr   error
	realErr error
	// writebacks counts the write-backs started (deferred Puts).
	writebacks int
}

func recordSyncs(t *testing.T, s *Sink) *syncLog {
	t.Helper()
	l := &syncLog{dir: s.Dir()}
	oldFile, oldFS, oldWB, oldMin := syncFile, syncFilesystem, writeback, writebackMin
	writebackMin = 1 // every deferred file with a byte (TestWritebackOfLargeFiles: the size)
	writeback = func(f *os.File) {
		l.mu.Lock()
		l.writebacks++
		l.mu.Unlock()
		oldWB(f)
	}
	syncFile = func(f *os.File) error {
		l.mu.Lock()
		name := f.Name()
		if rel, err := filepath.Rel(l.dir, name); err == nil && !strings.HasPrefix(rel, "..") {
			name = filepath.ToSlash(rel)
		}
		l.fsyncs = append(l.fsyncs, name)
		l.mu.Unlock()
		return oldFile(f)
	}
	syncFilesystem = func(f *os.File) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.syncfs++
		if l.fsErr != nil {
			return l.fsErr
		}
		return oldFS(f)
	}
	t.Cleanup(func() { syncFile, syncFilesystem, writeback, writebackMin = oldFile, oldFS, oldWB, oldMin })
	return l
}

// syncSink is a new sink whose syncs are recorded.
func syncSink(t *testing.T) (context.Context, *Sink, *sink.Bucket, *syncLog) {
	t.Helper()
	s := newSink(t)
	return context.Background(), s, sink.New(s), recordSyncs(t, s)
}

// take returns the fsyncs recorded since the last take, sorted, without
// those of the temporary folder.
func (l *syncLog) take() (fsyncs []string, syncfs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.fsyncs {
		if !strings.HasPrefix(n, reservedPrefix) {
			fsyncs = append(fsyncs, n)
		}
	}
	slices.Sort(fsyncs)
	fsyncs, syncfs = slices.Compact(fsyncs), l.syncfs
	l.fsyncs, l.syncfs = nil, 0
	return fsyncs, syncfs
}

func TestDeferredPutsSync(t *testing.T) {
	ctx := context.Background()
	keys := []string{"a/b/one.csv", "a/b/two.csv", "a/c/three.csv", "top.csv"}
	for _, tc := range []struct {
		name   string
		fsErr  error
		fsyncs []string // what Sync fsyncs
	}{
		// One syncfs, no fsync.
		{name: "syncfs"},
		// No syncfs: every file, then every folder on the way, once.
		{name: "fallback", fsErr: errors.ErrUnsupported,
			fsyncs: []string{".", "a", "a/b", "a/b/one.csv", "a/b/two.csv", "a/c", "a/c/three.csv", "top.csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink(t)
			if err := syncfsUsable(s.dirFile); tc.fsErr == nil && err != nil {
				t.Skipf("the test's folder: %v", err)
			}
			b := sink.New(s)
			l := recordSyncs(t, s)
			l.fsErr = tc.fsErr
			for _, k := range keys {
				if _, err := b.PutBytes(ctx, k, []byte(k), sink.PutOptions{Defer: true}); err != nil {
					t.Fatal(err)
				}
			}
			if got, n := l.take(); len(got) != 0 || n != 0 {
				t.Fatalf("deferred Puts fsynced %q, syncfs %d times; want nothing before Sync", got, n)
			}
			if l.writebacks != len(keys) {
				t.Errorf("deferred Puts started %d write-backs, want one each (%d)", l.writebacks, len(keys))
			}
			for _, k := range keys { // visible before Sync
				if got, _, err := b.ReadAll(ctx, k, 100); err != nil || string(got) != k {
					t.Fatalf("read %s before Sync: %q, %v", k, got, err)
				}
			}
			if err := b.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			got, n := l.take()
			if n != 1 || !slices.Equal(got, tc.fsyncs) {
				t.Errorf("Sync: syncfs %d times, fsyncs %q; want once and %q", n, got, tc.fsyncs)
			}
			if err := b.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if got, n := l.take(); len(got) != 0 || n != 0 {
				t.Errorf("a second Sync with nothing pending: fsyncs %q, syncfs %d", got, n)
			}
		})
	}
}

// TestSyncFailure: a failed Sync returns its error and forgets its keys
// (a later Sync could not tell whether they were written: the caller puts
// them again, as the next run's publication does); the objects put again
// are synced by the next Sync, a deleted one needs nothing.
func TestSyncFailure(t *testing.T) {
	ctx, _, b, l := syncSink(t)
	keys := []string{"x/1.csv", "x/2.csv", "gone/3.csv"}
	for _, k := range keys {
		if _, err := b.PutBytes(ctx, k, []byte("v"), sink.PutOptions{Defer: true}); err != nil {
			t.Fatal(err)
		}
	}
	broken := errors.New("EIO on write-back")
	l.fsErr = broken
	if err := b.Sync(ctx); !errors.Is(err, broken) {
		t.Fatalf("Sync = %v, want %v", err, broken)
	}
	l.take()
	l.fsErr = errors.ErrUnsupported
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, n := l.take(); len(got) != 0 || n != 0 {
		t.Errorf("a Sync after a failed one, nothing put again: fsyncs %q, syncfs %d; want nothing", got, n)
	}
	for _, k := range keys[:2] {
		if _, err := b.PutBytes(ctx, k, []byte("v"), sink.PutOptions{Defer: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.PutBytes(ctx, keys[2], []byte("v"), sink.PutOptions{Defer: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, keys[2]); err != nil {
		t.Fatal(err)
	}
	l.take()
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := l.take()
	if want := []string{".", "x", "x/1.csv", "x/2.csv"}; !slices.Equal(got, want) {
		t.Errorf("Sync of the objects put again fsynced %q, want %q", got, want)
	}
}

func TestDurablePutsAfterDeferredOnes(t *testing.T) {
	ctx, s, b, l := syncSink(t)
	// Without deferred Puts: the file and its folder (the folders exist).
	put(t, s, "m/n/first.json", "1")
	l.take()
	put(t, s, "m/n/second.json", "2")
	if got, _ := l.take(); !slices.Equal(got, []string{"m/n"}) {
		t.Errorf("a durable Put fsynced %q, want its folder only (and its temporary file)", got)
	}
	// A deferred Put creates p/q, not durable in p until Sync: a durable
	// Put into p/q must make the whole path durable itself.
	if _, err := b.PutBytes(ctx, "p/q/deferred.csv", []byte("d"), sink.PutOptions{Defer: true}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "p/q/durable.json", "x")
	if got, _ := l.take(); !slices.Equal(got, []string{".", "p", "p/q"}) {
		t.Errorf("a durable Put after a deferred one fsynced %q, want every folder of its key", got)
	}
	// Defer on a conditional Put is ignored: durable when it returns.
	if _, err := b.PutBytes(ctx, "p/q/manifest.json", []byte("m"), sink.PutOptions{Defer: true, IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.take(); !slices.Equal(got, []string{".", "p", "p/q"}) {
		t.Errorf("a conditional Put with Defer fsynced %q, want every folder of its key", got)
	}
	// Only the deferred Put started a write-back: a durable one's fsync
	// writes its file.
	if l.writebacks != 1 {
		t.Errorf("%d write-backs started, want 1 (the deferred Put's)", l.writebacks)
	}
}

// TestWritebackOfLargeFiles: a deferred Put starts the write-out of a file
// of writebackMin bytes or more only; the kernel writes the small ones
// with the rest (a period and month of 20,000 agencies have 120,000 files
// of a few KB: a write-out started for each cost more CPU than Sync saved).
func TestWritebackOfLargeFiles(t *testing.T) {
	ctx, _, b, l := syncSink(t)
	writebackMin = 8
	for _, body := range []string{"small", "1234567", "12345678", "123456789"} {
		if _, err := b.PutBytes(ctx, "w/"+body+".csv", []byte(body), sink.PutOptions{Defer: true}); err != nil {
			t.Fatal(err)
		}
	}
	if l.writebacks != 2 {
		t.Errorf("%d write-backs started, want 2 (the files of 8 and 9 bytes)", l.writebacks)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDeferredDeletes: a deferred Delete removes the file (and the folders
// it leaves empty) at once and fsyncs nothing; Sync, without a trusted
// syncfs, fsyncs the folder each one left (the first one not pruned), not
// the folders above it.
func TestDeferredDeletes(t *testing.T) {
	ctx, s, b, l := syncSink(t)
	for _, k := range []string{"a/b/old.csv", "a/b/new.csv", "a/c/only.csv", "d/e/f/only.csv"} {
		put(t, s, k, "v")
	}
	l.take()
	for _, k := range []string{"a/b/old.csv", "a/c/only.csv", "d/e/f/only.csv"} {
		if err := b.DeleteDeferred(ctx, k); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, sink.ErrNotFound) {
			t.Fatalf("%s after DeleteDeferred: %v, want it gone", k, err)
		}
	}
	if got, n := l.take(); len(got) != 0 || n != 0 {
		t.Fatalf("deferred deletes fsynced %q, syncfs %d times; want nothing before Sync", got, n)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "d")); !os.IsNotExist(err) {
		t.Errorf("the folders d/e/f left empty: %v, want them pruned", err)
	}
	l.fsErr = errors.ErrUnsupported
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, n := l.take()
	if want := []string{".", "a", "a/b"}; n != 1 || !slices.Equal(got, want) {
		t.Errorf("Sync after deferred deletes: fsyncs %q (syncfs tried %d times), want %q", got, n, want)
	}
}

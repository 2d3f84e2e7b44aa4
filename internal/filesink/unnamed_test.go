//go:build linux

package filesink

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// putDeferred stores body at key with a deferred Put and checks the file
// it leaves: its bytes and its mode.
func putDeferred(t *testing.T, s *Sink, key, body string) sink.Attrs {
	t.Helper()
	a, err := sink.New(s).PutBytes(context.Background(), key, []byte(body), sink.PutOptions{Defer: true})
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	p := filepath.Join(s.Dir(), filepath.FromSlash(key))
	got, err := os.ReadFile(p)
	if err != nil || string(got) != body {
		t.Fatalf("%s holds %q (%v), want %q", key, got, err, body)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != fileMode {
		t.Fatalf("%s: mode %v, want %v", key, fi.Mode(), os.FileMode(fileMode))
	}
	return a
}

// tempEntries lists what the Sink's temporary folder holds but its lock
// (nil when the Sink made none).
func tempEntries(t *testing.T, s *Sink) []string {
	t.Helper()
	if s.tmpDir == "" {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir(), filepath.FromSlash(s.tmpDir)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != tmpLockName {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestPutUnnamed: a deferred Put of a new key, in DIR or in folders it
// makes, is an unnamed file linked at key: the Sink never makes its
// temporary folder; Sync makes them durable.
func TestPutUnnamed(t *testing.T) {
	s := newSink(t)
	putDeferred(t, s, "top.csv", "a,b\n")
	putDeferred(t, s, "agencies/agency=A/period=P/summary.csv", "1,2\n")
	putDeferred(t, s, "agencies/agency=A/period=P/summary.parquet", "PAR1")
	if s.tmpDir != "" || s.noUnnamed.Load() {
		t.Fatalf("temporary folder %q, noUnnamed %v: want none made, unnamed files used", s.tmpDir, s.noUnnamed.Load())
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPutUnnamedReplaces: a deferred Put of a key that exists replaces it
// (a new ETag, even for the same bytes) through the temporary folder,
// where nothing is left.
func TestPutUnnamedReplaces(t *testing.T) {
	s := newSink(t)
	first := putDeferred(t, s, "p/x.csv", "old")
	second := putDeferred(t, s, "p/x.csv", "new")
	third := putDeferred(t, s, "p/x.csv", "new")
	if first.ETag == second.ETag || second.ETag == third.ETag {
		t.Fatalf("ETags %s, %s, %s: want each new", first.ETag, second.ETag, third.ETag)
	}
	if s.tmpDir == "" {
		t.Fatal("no temporary folder: the replacement did not go through it")
	}
	if left := tempEntries(t, s); len(left) != 0 {
		t.Fatalf("temporary folder holds %v, want nothing", left)
	}
	if s.noUnnamed.Load() {
		t.Fatal("a replacement turned unnamed files off")
	}
}

// TestPutUnnamedViaProc: where linkat AT_EMPTY_PATH is refused (no
// CAP_DAC_READ_SEARCH), the file is linked through /proc/self/fd.
func TestPutUnnamedViaProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Fatalf("/proc/self/fd: %v", err)
	}
	old := linkViaProc.Load()
	t.Cleanup(func() { linkViaProc.Store(old) })
	linkViaProc.Store(true)
	s := newSink(t)
	putDeferred(t, s, "a/b.csv", "via proc")
	putDeferred(t, s, "a/b.csv", "replaced via proc")
	if s.noUnnamed.Load() || len(tempEntries(t, s)) != 0 {
		t.Fatalf("noUnnamed %v, temporary folder %v", s.noUnnamed.Load(), tempEntries(t, s))
	}
}

// TestPutUnnamedFolderRemoved: a Delete that removes the key's new, empty
// folder between its creation and the link does not lose the Put: the
// file goes through the temporary folder, which makes the folder again.
func TestPutUnnamedFolderRemoved(t *testing.T) {
	s := newSink(t)
	t.Cleanup(func() { beforeLink = nil })
	removed := 0
	beforeLink = func(key string) {
		dir := filepath.Join(s.Dir(), filepath.FromSlash(path.Dir(key)))
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
		removed++
	}
	putDeferred(t, s, "gone/again/file.csv", "kept")
	if removed != 1 {
		t.Fatalf("the folder was removed %d times, want 1", removed)
	}
	if left := tempEntries(t, s); len(left) != 0 {
		t.Fatalf("temporary folder holds %v, want nothing", left)
	}
}

// TestPutUnnamedFailedBody: a body that fails leaves no file and no
// folder made for it.
func TestPutUnnamedFailedBody(t *testing.T) {
	s := newSink(t)
	_, err := sink.New(s).Put(context.Background(), "new/folder/file", failing{}, 1000, sink.PutOptions{Defer: true})
	if err == nil {
		t.Fatal("Put of a failing body succeeded")
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("new/ after a failed Put: %v, want it gone", err)
	}
}

// TestPutUnnamedOff: with unnamed files off (a file system without
// O_TMPFILE), a deferred Put takes the temporary folder and stores the
// same object.
func TestPutUnnamedOff(t *testing.T) {
	s := newSink(t)
	s.noUnnamed.Store(true)
	putDeferred(t, s, "p/q/r.csv", "through the temporary folder")
	if s.tmpDir == "" {
		t.Fatal("no temporary folder made")
	}
	if left := tempEntries(t, s); len(left) != 0 {
		t.Fatalf("temporary folder holds %v, want nothing", left)
	}
	got, _, err := sink.New(s).ReadAll(context.Background(), "p/q/r.csv", 100)
	if err != nil || !bytes.Equal(got, []byte("through the temporary folder")) {
		t.Fatalf("read back %q, %v", got, err)
	}
}

// TestDeadDeferredPutLeavesNothing: a process killed in the middle of a
// deferred Put leaves no file at all, hidden or at its key: the unnamed
// file dies with it.
func TestDeadDeferredPutLeavesNothing(t *testing.T) {
	const key = "agencies/agency=a/period=p/summary-1.csv"
	dir := killedPut(t, "TestDeadDeferredPutLeavesNothing", key, driver.PutOptions{Defer: true})
	if tmp := hidden(t, dir); len(tmp) != 0 {
		t.Fatalf("the killed deferred Put left %q, want nothing", tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s after the killed Put: %v, want none", key, err)
	}
}

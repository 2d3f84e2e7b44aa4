//go:build linux

package filesink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reportjob/reportjob/internal/sink"
)

// fdOpen reports whether fd is an open descriptor.
func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return !errors.Is(err, unix.EBADF)
}

// TestPutUnnamedKeepsFolder: the objects of one folder share one kept
// descriptor; Close closes it.
func TestPutUnnamedKeepsFolder(t *testing.T) {
	s := newSink(t)
	opens := 0
	for _, name := range []string{"summary.csv", "summary.parquet", "transactions.csv", "transactions.parquet"} {
		putDeferred(t, s, "agencies/agency=A/period=P/"+name, name)
	}
	h, err := s.folders.acquire("agencies/agency=A/period=P", func() (int, error) { opens++; return -1, errors.New("opened again") })
	if err != nil || opens != 0 {
		t.Fatalf("the folder was not kept: %v", err)
	}
	s.folders.release(h, false)
	if n := s.folders.len(); n != 1 {
		t.Fatalf("%d descriptors kept, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fdOpen(h.fd) {
		t.Fatalf("descriptor %d still open after Close", h.fd)
	}
}

// TestPutUnnamedKeptFolderRemoved: a Delete of a folder's last object
// removes the folder its descriptor was kept for; the next Put there
// makes it again and stores its object at its key, still as an unnamed
// file (the Sink never makes its temporary folder).
func TestPutUnnamedKeptFolderRemoved(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	ctx := context.Background()
	for round := range 3 {
		key := fmt.Sprintf("agencies/agency=A/period=P/file-%d.csv", round)
		putDeferred(t, s, key, key)
		if err := b.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(s.Dir(), "agencies")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: agencies/ after the Delete: %v, want it gone", round, err)
		}
	}
	putDeferred(t, s, "agencies/agency=A/period=P/last.csv", "last")
	if s.noUnnamed.Load() || s.tmpDir != "" {
		t.Fatalf("noUnnamed %v, temporary folder %q: want unnamed files throughout", s.noUnnamed.Load(), s.tmpDir)
	}
}

// TestFolderCacheEvicts: past folderCap the least recently used
// descriptor is closed, unless a Put still holds it: then when it is
// handed back. A stale one is dropped at once.
func TestFolderCacheEvicts(t *testing.T) {
	dir := t.TempDir()
	var c folderCache
	open := func() (int, error) { return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) }
	held, err := c.acquire("f-0", open)
	if err != nil {
		t.Fatal(err)
	}
	var first []int
	for i := 1; i <= folderCap; i++ {
		h, err := c.acquire(fmt.Sprintf("f-%d", i), open)
		if err != nil {
			t.Fatal(err)
		}
		c.release(h, false)
		first = append(first, h.fd)
	}
	if n := c.len(); n != folderCap {
		t.Fatalf("%d kept, want %d", n, folderCap)
	}
	if !fdOpen(held.fd) {
		t.Fatal("an evicted descriptor still held by a Put was closed")
	}
	c.release(held, false)
	if fdOpen(held.fd) {
		t.Fatal("an evicted descriptor stayed open once handed back")
	}
	h, _ := c.acquire("f-1", open)
	if h.fd != first[0] {
		t.Fatalf("f-1 opened again (%d, kept %d)", h.fd, first[0])
	}
	c.release(h, true)
	if fdOpen(first[0]) || c.len() != folderCap-1 {
		t.Fatalf("a stale descriptor was kept (open %v, %d kept)", fdOpen(first[0]), c.len())
	}
	c.close()
	for _, fd := range first[1:] {
		if fdOpen(fd) {
			t.Fatalf("descriptor %d open after close", fd)
		}
	}
}

// TestPutUnnamedConcurrentFolders: concurrent deferred Puts into
// overlapping folders, with Deletes emptying them, store every object
// they report at its key.
func TestPutUnnamedConcurrentFolders(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := fmt.Sprintf("agencies/agency=%d/period=P/w%d-%d.csv", i%5, w, i)
				if _, err := b.PutBytes(ctx, key, []byte(key), sink.PutOptions{Defer: true}); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					if err := b.Delete(ctx, key); err != nil {
						errs <- err
						return
					}
					continue
				}
				got, err := os.ReadFile(filepath.Join(s.Dir(), filepath.FromSlash(key)))
				if err != nil || string(got) != key {
					errs <- fmt.Errorf("%s holds %q (%v)", key, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

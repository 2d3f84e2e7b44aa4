package filesink

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

// putFileFrom puts a 1 MB file made in dir through sink.Bucket.PutFile
// and returns the file's path and the object's.
func putFileFrom(t *testing.T, s *Sink, dir string) (src, obj string) {
	t.Helper()
	src = filepath.Join(dir, "enc-1")
	data := drivertest.Bytes(1<<20, 3)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b := sink.New(s)
	if _, err := b.PutFile(context.Background(), "transactions/period=P/transactions-1.parquet", src, sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	drivertest.RequireContent(t, b, "transactions/period=P/transactions-1.parquet", data)
	if got := hidden(t, s.Dir()); len(got) != 0 {
		t.Fatalf("temporary files left: %q", got)
	}
	return src, filepath.Join(s.Dir(), "transactions", "period=P", "transactions-1.parquet")
}

// TestPutFileLinks: a file on the sink's file system is stored by a hard
// link (the object is the file's inode: no byte copied), with the sink's
// file mode.
func TestPutFileLinks(t *testing.T) {
	s := newSink(t)
	src, obj := putFileFrom(t, s, t.TempDir())
	same, mode := sameFile(t, src, obj)
	if !same {
		t.Fatal("the object is a copy, want a hard link to the file")
	}
	if mode != fileMode {
		t.Errorf("object mode %v, want %v", mode, os.FileMode(fileMode))
	}
}

// TestPutFileOtherFileSystem: a file on another file system (tmpfs
// /dev/shm) cannot be linked: it is copied.
func TestPutFileOtherFileSystem(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "filesink-test-")
	if err != nil {
		t.Skipf("no /dev/shm to put a file on another file system: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	s := newSink(t)
	src, obj := putFileFrom(t, s, shm)
	if same, _ := sameFile(t, src, obj); same {
		t.Fatal("the object shares the file's inode across file systems")
	}
}

// sameFile reports whether the files at a and b are one file, and b's
// permissions.
func sameFile(t *testing.T, a, b string) (bool, os.FileMode) {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb), fb.Mode().Perm()
}

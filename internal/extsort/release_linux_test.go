//go:build linux

package extsort

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// allocated is the number of bytes of disk (or memory, on tmpfs) the file
// holds, delayed allocations included.
func allocated(t *testing.T, name string) int64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// punches reports whether dir's file system is one that punches holes
// (the ones reportjob's scratch folder is expected on); elsewhere the test
// only checks that the records read back.
func punches(t *testing.T, dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
		return true
	}
	t.Logf("file system type %#x: release not checked", st.Type)
	return false
}

// TestReleaseRead: a reader frees the run file's bytes it has read, as it
// goes, and every record still reads back whole, the trailer checked.
func TestReleaseRead(t *testing.T) {
	dir := t.TempDir()
	var recs []rec
	for i := range 40_000 { // about 6 MiB
		recs = append(recs, rec{fmt.Sprintf("key-%08d", i), fmt.Sprintf("%0140d", i)})
	}
	f := writeRun(t, dir, recs)
	full := allocated(t, f.name)
	if full < f.size-releaseStep {
		t.Fatalf("a fresh run holds %d bytes of %d", full, f.size)
	}
	r, err := openRun(f.name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	check := punches(t, dir)
	for i := 0; ; i++ {
		k, v, err := r.next()
		if err == io.EOF {
			if i != len(recs) {
				t.Fatalf("read %d records, wrote %d", i, len(recs))
			}
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if string(k) != recs[i].k || string(v) != recs[i].v {
			t.Fatalf("record %d: %q, want %q", i, k, recs[i].k)
		}
		if i == len(recs)*3/4 && check {
			if r.released < 3*releaseStep {
				t.Fatalf("three quarters in, released up to %d", r.released)
			}
			if got := allocated(t, f.name); got > full-r.released+releaseStep {
				t.Fatalf("three quarters in (released up to %d), the file holds %d of %d bytes", r.released, got, full)
			}
		}
	}
	if fi, err := os.Stat(f.name); err != nil || fi.Size() != f.size {
		t.Fatalf("after the read: %v, size %v, want %d (holes keep the size)", err, fi, f.size)
	}
}

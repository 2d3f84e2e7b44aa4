//go:build linux

package extsort

import (
	"os"

	"golang.org/x/sys/unix"
)

// release frees the pages and disk blocks of f's bytes [off, off+n), which
// the merge has read and will not read again: a hole punched in the file,
// its size kept. It reports false when the file system cannot punch holes
// (the bytes then stay until the run file is removed).
func release(f *os.File, off, n int64) bool {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	return err == nil
}

package filesink

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// syncFS writes out the file system of f with syncfs(2), whose error
// covers the write-backs that failed since f was opened. It is
// errors.ErrUnsupported (Sync then fsyncs each path) where syncfs cannot
// be trusted with that (syncfsUsable).
func syncFS(f *os.File) error {
	if err := syncfsUsable(f); err != nil {
		return err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	if errors.Is(serr, unix.ENOSYS) {
		return fmt.Errorf("syncfs: %w", errors.ErrUnsupported)
	}
	if serr != nil {
		return fmt.Errorf("syncfs %s: %w", f.Name(), serr)
	}
	return nil
}

// syncfsSince is, for each file system whose syncfs(2) is trusted, the
// first Linux release whose syncfs reports the write-back errors of its
// files (5.8 tracks them per file system). Before that, syncfs returns 0
// after a failed write-back: a deferred file lost to an I/O error would
// go unseen, and its manifest be written. Elsewhere (FUSE, SMB, NFS, ZFS,
// overlayfs, ...) syncfs may not reach the server or the disk, or report
// its errors, as an fsync does: Sync fsyncs each path there.
var syncfsSince = map[uint32][2]int{
	unix.EXT4_SUPER_MAGIC:  {5, 8}, // and ext2, ext3
	unix.XFS_SUPER_MAGIC:   {5, 8},
	unix.BTRFS_SUPER_MAGIC: {5, 8},
	unix.F2FS_SUPER_MAGIC:  {5, 8},
	unix.TMPFS_MAGIC:       {5, 8},
}

// kernelRelease and fsMagic are what syncfsUsable looks at (a test fakes
// them).
var (
	kernelRelease = sync.OnceValue(func() string {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return ""
		}
		return unix.ByteSliceToString(u.Release[:])
	})
	fsMagic = func(f *os.File) (uint32, error) {
		rc, err := f.SyscallConn()
		if err != nil {
			return 0, err
		}
		var st unix.Statfs_t
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil {
			return 0, err
		}
		return uint32(st.Type), serr
	}
)

// syncfsUsable returns nil if syncfs(2) of f's file system makes its
// files durable and reports their write-back errors, else an error
// wrapping errors.ErrUnsupported that says why not.
func syncfsUsable(f *os.File) error {
	magic, err := fsMagic(f)
	if err != nil {
		return fmt.Errorf("syncfs: statfs: %v: %w", err, errors.ErrUnsupported)
	}
	since, ok := syncfsSince[magic]
	if !ok {
		return fmt.Errorf("syncfs: not trusted on file system type %#x: %w", magic, errors.ErrUnsupported)
	}
	rel := kernelRelease()
	if !releaseAtLeast(rel, since) {
		return fmt.Errorf("syncfs: Linux %q reports write-back errors of file system type %#x from %d.%d on: %w",
			rel, magic, since[0], since[1], errors.ErrUnsupported)
	}
	return nil
}

// releaseAtLeast reports whether the kernel release rel ("6.8.0-45-generic",
// "4.18.0-553.el8_10.x86_64") is at least major.minor; false when rel
// cannot be read.
func releaseAtLeast(rel string, v [2]int) bool {
	fields := strings.SplitN(rel, ".", 3)
	if len(fields) < 2 {
		return false
	}
	var n [2]int
	for i := range n {
		end := strings.IndexFunc(fields[i], func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(fields[i])
		}
		x, err := strconv.Atoi(fields[i][:end])
		if err != nil {
			return false
		}
		n[i] = x
	}
	return n[0] > v[0] || n[0] == v[0] && n[1] >= v[1]
}

// startWriteback starts writing f's dirty pages to the disk without
// waiting (sync_file_range(2) with SYNC_FILE_RANGE_WRITE), for a deferred
// Put: the disk writes while the caller encodes the period's other files,
// and Sync, which makes them durable, finds little left to wait for (a
// period of a million line items has about 180 MB of files: its Sync
// waited 0.1 to 0.2 s for them, a 5M period's 0.5 s). It is a hint: it
// neither waits nor makes anything durable, and a write-back that fails
// is reported, as before, by Sync (syncfs reports the write-back errors
// of the file system since New; an fsync, those not yet seen: this call
// does not see them).
func startWriteback(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { _ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE) })
}

// flushFS writes out the file system of the folder dir with syncfs(2) on
// a descriptor of its own, and ignores the error (flush.go: Sync, on the
// descriptor New opened, reports it).
func flushFS(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = unix.Syncfs(fd)
	unix.Close(fd)
}

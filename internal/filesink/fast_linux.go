package filesink

import (
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The per-object fast path on Linux (fast.go says what it does and why it
// stays inside DIR). Each function answers errSlow when it cannot be used
// here: the caller then does what the os.Root methods do.

// openBeneath opens the folder rel (a clean relative path of plain names)
// below the folder dirfd with one openat2(2) that the kernel confines to
// that folder and that refuses every symbolic link on the way (and a key
// never names "..": fastKey). A missing folder is ENOENT; any other refusal
// is for os.Root to report.
func openBeneath(dirfd int, rel string) (int, error) {
	if noOpenat2.Load() {
		return -1, errSlow
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			// EAGAIN: a concurrent rename below dirfd; the kernel asks
			// for a new look-up.
			continue
		case errors.Is(err, unix.ENOENT):
			return -1, err
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			noOpenat2.Store(true)
		}
		return -1, errSlow
	}
}

// openChild opens the folder name (one plain name) in the folder dirfd,
// not following a symbolic link.
func openChild(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

// mkdirChild creates the folder name (one plain name) in the folder dirfd.
func mkdirChild(dirfd int, name string) error {
	return unix.Mkdirat(dirfd, name, dirMode)
}

// createChild creates the new file name (one plain name) in the folder
// dirfd, read-write, and returns it as an *os.File called path: not a
// symbolic link (O_EXCL), and not registered with the runtime's poller
// (a regular file never waits there).
func createChild(dirfd int, name, path string) (*os.File, error) {
	return openFileChild(dirfd, name, path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL)
}

// openRWChild opens the file name (one plain name) in the folder dirfd,
// read-write, not following a symbolic link, as createChild does.
func openRWChild(dirfd int, name, path string) (*os.File, error) {
	return openFileChild(dirfd, name, path, unix.O_RDWR)
}

func openFileChild(dirfd int, name, path string, flags int) (*os.File, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, fileMode)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "openat", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// createUnnamed makes an unnamed file in the folder dirfd, read-write
// (open(2) O_TMPFILE), and returns it as an *os.File called path (its
// future name); errSlow where the file system or kernel has none.
func createUnnamed(dirfd int, path string) (*os.File, error) {
	for {
		fd, err := unix.Openat(dirfd, ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, fileMode)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), path), nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
			// EISDIR: a kernel before 3.11 reads O_TMPFILE as O_DIRECTORY.
			return nil, errSlow
		}
		return nil, &os.PathError{Op: "openat O_TMPFILE", Path: path, Err: err}
	}
}

// linkViaProc is set once linkat(2) AT_EMPTY_PATH was refused and
// /proc/self/fd worked: the process lacks CAP_DAC_READ_SEARCH.
var linkViaProc atomic.Bool

// linkUnnamed names the unnamed file f name in the folder dirfd (a plain
// name): linkat(2) of its descriptor with AT_EMPTY_PATH, which needs
// CAP_DAC_READ_SEARCH and is otherwise refused with ENOENT, or through
// /proc/self/fd/N. errSlow when neither links (no capability and no
// /proc, or dirfd removed: the caller tells which); EEXIST when name is
// taken.
func linkUnnamed(f *os.File, dirfd int, name string) error {
	fd := int(f.Fd())
	if !linkViaProc.Load() {
		err := unix.Linkat(fd, "", dirfd, name, unix.AT_EMPTY_PATH)
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) {
			return err
		}
	}
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
	switch {
	case err == nil:
		// The same folder took it: AT_EMPTY_PATH's refusal was the
		// capability, not a removed folder.
		linkViaProc.Store(true)
		return nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EPERM):
		return errSlow
	}
	return err
}

// renameChild renames the file oldname in the folder olddirfd to newname
// in the folder newdirfd (plain names: renameat(2) neither follows nor
// leaves either folder).
func renameChild(olddirfd int, oldname string, newdirfd int, newname string) error {
	return unix.Renameat(olddirfd, oldname, newdirfd, newname)
}

// setMtime sets f's modification time (not its access time) through
// its descriptor: utimensat(2) with no path, futimens(3).
func setMtime(f *os.File, mtime time.Time) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, fd, 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
		if e != 0 {
			serr = e
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "futimens", Path: f.Name(), Err: serr}
	}
	return nil
}

// dupFile returns a new *os.File called path on a duplicate of fd.
func dupFile(fd int, path string) (*os.File, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: path, Err: err}
	}
	return os.NewFile(uintptr(nfd), path), nil
}

// closeFD closes a descriptor of the fast path.
func closeFD(fd int) { unix.Close(fd) }

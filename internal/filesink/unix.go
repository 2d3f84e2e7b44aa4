//go:build unix

package filesink

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// etag is the file's inode, size and modification time in nanoseconds, in
// hex: a rename of a new temporary file changes the inode, and stamp makes
// the time later than the replaced file's, so no Put repeats an ETag of
// the object it replaces or of the one before.
func etag(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return strconv.FormatUint(ino, 16) + "-" + strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16)
}

// lockPoll bounds the wait between two attempts to take the flock.
const lockPoll = 20 * time.Millisecond

// lock takes the sink's exclusive lock: first this process's semaphore,
// then flock(2) on DIR/.reportjob-sink.lock, polling so that ctx can end
// the wait. The returned function releases both; calling it again is a
// no-op.
func (s *Sink) lock(ctx context.Context) (func(), error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lock %s: %w", lockName, ctx.Err())
	}
	f, err := s.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		<-s.sem
		return nil, fmt.Errorf("lock: %w", err)
	}
	for wait := time.Millisecond; ; wait = min(2*wait, lockPoll) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			<-s.sem
			return nil, fmt.Errorf("lock %s: %w", lockName, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			f.Close()
			<-s.sem
			return nil, fmt.Errorf("lock %s: %w", lockName, ctx.Err())
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			f.Close() // releases the flock
			<-s.sem
		})
	}, nil
}

// lockNow takes f's exclusive flock without waiting.
func lockNow(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}

// tryLock reports whether f's exclusive flock could be taken (it is
// released when f is closed).
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// linkInto makes name, in the folder dirfd (the root dir), a hard link
// to the file at src. A missing src is an error; any other refusal
// (another file system, a file system without hard links, too many links)
// wraps errors.ErrUnsupported: the caller copies the file instead.
func linkInto(dir *os.Root, dirfd int, name, src string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("%w: link %s: %v", errors.ErrUnsupported, src, err)
	}
	if dirfd < 0 {
		d, err := dir.Open(".")
		if err != nil {
			return fmt.Errorf("open temporary folder: %w", err)
		}
		defer d.Close()
		dirfd = int(d.Fd())
	}
	err = unix.Linkat(unix.AT_FDCWD, abs, dirfd, name, 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("link %s: %w", src, err)
	}
	return fmt.Errorf("%w: link %s: %v", errors.ErrUnsupported, src, err)
}

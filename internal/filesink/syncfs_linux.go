package filesink

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS writes out the file system of f with syncfs(2), whose error
// covers the write-backs that failed since f was opened (Linux 5.8 and
// later). A kernel without it is errors.ErrUnsupported.
func syncFS(f *os.File) error {
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

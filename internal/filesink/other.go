//go:build !unix

package filesink

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
)

// etag is the file's size and modification time in nanoseconds, in hex.
func etag(fi fs.FileInfo) string {
	return strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16)
}

// lock is not implemented here: conditional puts need flock(2).
func (s *Sink) lock(context.Context) (func(), error) {
	return nil, errors.New("file sink: conditional put needs flock(2), which this system lacks")
}

// lockNow is a no-op here: without flock(2), temporary folders are never
// proven dead, and never swept.
func lockNow(*os.File) error { return nil }

// tryLock reports false: no temporary folder is proven dead.
func tryLock(*os.File) bool { return false }

// linkInto is not done here: the caller copies the file.
func linkInto(*os.Root, int, string, string) error { return errors.ErrUnsupported }

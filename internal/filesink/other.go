//go:build !unix

package filesink

import (
	"context"
	"errors"
	"io/fs"
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

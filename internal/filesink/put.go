package filesink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// Put writes body to a temporary file beside the target, fsyncs it and
// renames it over the target (under the lock for a conditional Put), then
// fsyncs the folder (with opts.Defer, Sync does the fsyncs: sync.go; and
// on Linux the file is an unnamed one in the key's folder: unnamed.go).
// Every Put gives the file a modification time later
// than the one it replaces, so its ETag is new even for the same bytes.
func (s *Sink) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	if reserved(key) {
		return driver.Attrs{}, errReserved
	}
	durable := s.durable(opts)
	if !durable {
		a, err := s.putUnnamed(ctx, key, body, size)
		if !errors.Is(err, errSlow) {
			return a, err
		}
	}
	tmp, t, err := s.createTemp()
	if err != nil {
		return driver.Attrs{}, err
	}
	f := t.f
	done := false
	defer func() {
		if !done {
			s.abandon(key, tmp, f)
		}
	}()
	if err := writeBody(ctx, f, body, size); err != nil {
		return driver.Attrs{}, err
	}
	var fi fs.FileInfo
	if opts.IfNoneMatch || opts.IfMatch != "" {
		// The body is made durable before the lock is taken, so that the
		// lock is held for the stamp's fsync only.
		if err := syncFile(f); err != nil {
			return driver.Attrs{}, fmt.Errorf("sync temporary file: %w", err)
		}
		unlock, err := s.lock(ctx)
		if err != nil {
			return driver.Attrs{}, err
		}
		defer unlock()
		cur, err := s.root.Lstat(key)
		if err != nil && !missing(err) {
			return driver.Attrs{}, err
		}
		if err := precondition(cur, opts); err != nil {
			return driver.Attrs{}, err
		}
		if fi, err = stamp(t, cur, true); err != nil {
			return driver.Attrs{}, err
		}
		if err := ctx.Err(); err != nil {
			return driver.Attrs{}, err
		}
		if err := s.place(tmp, t, key, true); err != nil {
			return driver.Attrs{}, err
		}
		unlock()
	} else if fi, err = s.placeNew(ctx, key, tmp, t, durable); err != nil {
		return driver.Attrs{}, err
	}
	done = true
	return s.finish(key, f, fi, durable)
}

// writeBody writes the size bytes of body, from its start, to f.
func writeBody(ctx context.Context, f *os.File, body io.ReadSeeker, size int64) error {
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	buf := copyBufs.Get().(*[]byte)
	// Through a plain io.Writer: (*os.File).ReadFrom would copy a reader
	// that is not a file with a 32 KiB buffer of its own, allocated for
	// each Put (13 GB for the 400,000 objects of a big period), not buf.
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, ctxReader{ctx, io.LimitReader(body, size)}, *buf)
	copyBufs.Put(buf)
	if err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if n != size {
		return fmt.Errorf("body: %w after %d of %d bytes", io.ErrUnexpectedEOF, n, size)
	}
	return nil
}

// abandon removes the temporary file tmp of a failed Put of key, and the
// folder made for it if any.
func (s *Sink) abandon(key, tmp string, f *os.File) {
	f.Close()
	s.root.Remove(tmp)
	s.prune(path.Dir(key))
}

// placeNew makes the complete temporary file t (tmp) durable (unless
// deferred) and renames it to key, replacing any object there.
func (s *Sink) placeNew(ctx context.Context, key, tmp string, t tempFile, durable bool) (fs.FileInfo, error) {
	// One fsync (stamp's) makes the body and its time durable.
	fi, err := stamp(t, nil, durable)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.place(tmp, t, key, durable); err != nil {
		return nil, err
	}
	return fi, nil
}

// finish closes the file placed at key and makes its name durable, or,
// for a deferred Put (durable false), leaves that to Sync.
func (s *Sink) finish(key string, f *os.File, fi fs.FileInfo, durable bool) (driver.Attrs, error) {
	if !durable && fi.Size() >= writebackMin {
		writeback(f)
	}
	if err := f.Close(); err != nil {
		return driver.Attrs{}, fmt.Errorf("close %s: %w", key, err)
	}
	if !durable {
		s.addPending(key)
		s.noteDeferred(fi.Size())
		return attrs(key, fi), nil
	}
	if err := s.syncFolders(key); err != nil {
		return driver.Attrs{}, err
	}
	return attrs(key, fi), nil
}

// PutFile stores the file at path by a hard link from the Sink's
// temporary folder (driver.FilePutter): its bytes are not copied. Then as
// Put: its mode and time set, fsynced, renamed to key, the folder fsynced.
// A file on another file system, or one the kernel will not link, is
// errors.ErrUnsupported (the caller copies it with Put); so is a
// conditional put.
func (s *Sink) PutFile(ctx context.Context, key, src string, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	if reserved(key) {
		return driver.Attrs{}, errReserved
	}
	if opts.IfNoneMatch || opts.IfMatch != "" {
		return driver.Attrs{}, fmt.Errorf("%w: conditional put of a file", errors.ErrUnsupported)
	}
	durable := s.durable(opts)
	tmp, t, err := s.linkTemp(src)
	if err != nil {
		return driver.Attrs{}, err
	}
	f := t.f
	done := false
	defer func() {
		if !done {
			s.abandon(key, tmp, f)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return driver.Attrs{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return driver.Attrs{}, fmt.Errorf("%w: %s is not a regular file of %d bytes", errors.ErrUnsupported, src, size)
	}
	if fi, err = s.placeNew(ctx, key, tmp, t, durable); err != nil {
		return driver.Attrs{}, err
	}
	done = true
	return s.finish(key, f, fi, durable)
}

// place renames the temporary file tmp (t) to key, creating key's folder
// when the rename finds it missing (the usual folder exists: one rename,
// no look-up before it); a Delete may remove a new, empty folder before
// the rename: then it tries again. durable: as makeFolder's. It takes the
// fast path (fast.go) where it can, else the os.Root path.
func (s *Sink) place(tmp string, t tempFile, key string, durable bool) error {
	if err := s.placeFast(t, key, durable); err == nil {
		return nil
	}
	rel := path.Dir(key)
	for attempt := 0; ; attempt++ {
		err := s.root.Rename(tmp, key)
		if err == nil || !missing(err) || rel == "." || attempt > mkdirRetries {
			return err
		}
		if err := s.makeFolder(rel, durable); err != nil {
			return err
		}
	}
}

// copyBufs holds the buffers of Put's copies (256 KiB each).
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 256<<10)
	return &b
}}

// precondition checks opts against cur, the target's Lstat (nil when
// there is none).
func precondition(cur fs.FileInfo, opts driver.PutOptions) error {
	switch {
	case opts.IfNoneMatch && cur != nil:
		return fmt.Errorf("%w: an object exists (ETag %s)", driver.ErrPrecondition, etagOf(cur))
	case opts.IfMatch == "":
		return nil
	case cur == nil:
		return fmt.Errorf("%w: no object, want ETag %s", driver.ErrPrecondition, opts.IfMatch)
	case etagOf(cur) != opts.IfMatch:
		return fmt.Errorf("%w: ETag is %s, want %s", driver.ErrPrecondition, etagOf(cur), opts.IfMatch)
	}
	return nil
}

// etagOf is etag, or "a folder" for a folder.
func etagOf(fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return "(not a file)"
	}
	return etag(fi)
}

// stamp sets the modification time of the temporary file t to now, or
// just after cur's when that is not earlier, and its mode to fileMode
// (when it is not already: a file created under a strict umask, a linked
// file), fsyncs it (when durable) and returns its FileInfo.
func stamp(t tempFile, cur fs.FileInfo, durable bool) (fs.FileInfo, error) {
	mtime := time.Now()
	if cur != nil && !mtime.After(cur.ModTime()) {
		mtime = cur.ModTime().Add(time.Nanosecond)
	}
	err := setMtime(t.f, mtime)
	if errors.Is(err, errSlow) {
		err = t.dir.Chtimes(t.name, time.Time{}, mtime)
	}
	if err != nil {
		return nil, err
	}
	fi, err := t.f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode() != fileMode {
		if err := t.f.Chmod(fileMode); err != nil {
			return nil, err
		}
		if fi, err = t.f.Stat(); err != nil {
			return nil, err
		}
	}
	if durable {
		if err := syncFile(t.f); err != nil {
			return nil, fmt.Errorf("sync temporary file: %w", err)
		}
	}
	return fi, nil
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Package filesink is a sink driver (driver.Bucket) on a local folder:
// the key "a/b/c.csv" is the file DIR/a/b/c.csv. Callers use it through
// the portable sink.Bucket: sink.New(s), s from New(dir).
//
// Every file operation goes through an os.Root on DIR, so no key, symbolic
// link or concurrent rename can reach outside the folder. Files are 0640
// and the folders it creates 0750 (less when the umask says so).
//
// A Put is atomic: the body goes to a temporary file outside the visible
// tree (in DIR/.reportjob-tmp/, see temp.go), which is fsynced and renamed
// over the target, and the target's folder is fsynced. A Put with
// PutOptions.Defer leaves out those fsyncs and records the key: Sync
// (sync.go) makes the deferred files and their folders durable in one
// round (one syncfs where it is trusted, else one fsync each). The temporary files
// of a process that died are removed by the next New. A conditional Put compares the target's ETag and
// renames while holding an exclusive flock(2) on DIR/.reportjob-sink.lock,
// so that of two processes (or goroutines) racing to create or replace
// one object exactly one wins. Delete removes the file and then the
// folders it leaves empty, up to DIR.
//
// Names whose first byte is '.' are the driver's own (the lock, temporary
// files) or foreign (editor and desktop files): List never shows them,
// and keys with a segment starting with ".reportjob-" are reserved.
package filesink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

const (
	fileMode = 0o640
	dirMode  = 0o750
	// reservedPrefix starts the name of every file the driver keeps for
	// itself; no key may have a segment starting with it.
	reservedPrefix = ".reportjob-"
	// lockName is the lock file of conditional puts, in DIR.
	lockName = reservedPrefix + "sink.lock"
	// tmpPrefix starts the name of every temporary file.
	tmpPrefix = reservedPrefix + "tmp-"
	// pathMax is Linux's PATH_MAX less its terminating NUL: the longest
	// absolute path of a file another program can open.
	pathMax = 4095
	// nameMax is the longest file name (one segment).
	nameMax = 255
	// mkdirRetries bounds the retries of a Put whose folder a concurrent
	// Delete removed while it was being created.
	mkdirRetries = 3
)

var errReserved = errors.New("key has a segment starting with " + reservedPrefix + ", reserved for the file sink's own files")

// Sink is a driver.Bucket on a local folder. It is safe for concurrent
// use, by several goroutines and several processes.
type Sink struct {
	dir     string   // absolute, cleaned
	root    *os.Root // dir
	dirFile *os.File // dir, open since New (Sync)
	// sem serializes this process's conditional puts before they take
	// the flock (which excludes other processes).
	sem chan struct{}

	tmpMu   sync.Mutex
	tmpDir  string   // this Sink's temporary folder, "" until the first Put
	tmpRoot *os.Root // tmpDir, where Put creates and stamps its files
	tmpLock *os.File // its .lock, flocked while the Sink is open
	tmpSeq  atomic.Uint64

	// Deferred Puts (sync.go).
	pendMu  sync.Mutex
	pending map[string]struct{} // keys stored by deferred Puts, not yet synced
	// deferred is set by the first deferred Put, before it creates a
	// folder: from then on a durable Put fsyncs every folder of its key,
	// which may have been created by a deferred Put and not be durable yet.
	deferred atomic.Bool
}

var (
	_ driver.Bucket     = (*Sink)(nil)
	_ driver.FilePutter = (*Sink)(nil)
	_ driver.Syncer     = (*Sink)(nil)
)

// New returns a sink on dir, creating it (and its parents, 0750) if
// needed. Close releases it.
func New(dir string) (*Sink, error) {
	if dir == "" {
		return nil, errors.New("file sink: empty folder")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("file sink %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	// Open for Sync's syncfs(2), from now on: it reports the write-back
	// errors since the descriptor was opened.
	dirFile, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("file sink: %w", err)
	}
	s := &Sink{dir: abs, root: root, dirFile: dirFile, sem: make(chan struct{}, 1)}
	s.sweepTemp()
	return s, nil
}

// Close removes the Sink's temporary folder and releases the folder. The
// Sink must not be used afterwards.
func (s *Sink) Close() error {
	s.closeTemp()
	s.dirFile.Close()
	return s.root.Close()
}

// Dir returns the sink's absolute folder.
func (s *Sink) Dir() string { return s.dir }

// String returns "file://" and the absolute folder: "file:///srv/reports".
func (s *Sink) String() string { return "file://" + filepath.ToSlash(s.dir) }

// MaxKeyLen is what keeps DIR/key within PATH_MAX (4,095 bytes).
func (s *Sink) MaxKeyLen() int { return pathMax - len(s.dir) - 1 }

// MaxSegmentLen is the longest file name, 255 bytes.
func (s *Sink) MaxSegmentLen() int { return nameMax }

// reserved reports whether key has a segment starting with reservedPrefix.
func reserved(key string) bool {
	return strings.HasPrefix(key, reservedPrefix) || strings.Contains(key, "/"+reservedPrefix)
}

// missing reports whether err says there is no file at a path (or a
// component of the path is a file, not a folder).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// attrs returns the Attrs of the file fi at key.
func attrs(key string, fi fs.FileInfo) driver.Attrs {
	return driver.Attrs{Key: key, Size: fi.Size(), ETag: etag(fi), Modified: fi.ModTime().UTC()}
}

// Put writes body to a temporary file beside the target, fsyncs it and
// renames it over the target (under the lock for a conditional Put), then
// fsyncs the folder (with opts.Defer, Sync does the fsyncs: sync.go).
// Every Put gives the file a modification time later
// than the one it replaces, so its ETag is new even for the same bytes.
func (s *Sink) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	if reserved(key) {
		return driver.Attrs{}, errReserved
	}
	durable := s.durable(opts)
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
	if err := f.Chmod(fileMode); err != nil {
		return driver.Attrs{}, err
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return driver.Attrs{}, fmt.Errorf("body: %w", err)
	}
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(f, ctxReader{ctx, io.LimitReader(body, size)}, *buf)
	copyBufs.Put(buf)
	if err != nil {
		return driver.Attrs{}, fmt.Errorf("write temporary file: %w", err)
	}
	if n != size {
		return driver.Attrs{}, fmt.Errorf("body: %w after %d of %d bytes", io.ErrUnexpectedEOF, n, size)
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
		if err := s.place(tmp, key, true); err != nil {
			return driver.Attrs{}, err
		}
		unlock()
	} else if fi, err = s.placeNew(ctx, key, tmp, t, durable); err != nil {
		return driver.Attrs{}, err
	}
	done = true
	return s.finish(key, f, fi, durable)
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
	if err := s.place(tmp, key, durable); err != nil {
		return nil, err
	}
	return fi, nil
}

// finish closes the file placed at key and makes its name durable, or,
// for a deferred Put (durable false), leaves that to Sync.
func (s *Sink) finish(key string, f *os.File, fi fs.FileInfo, durable bool) (driver.Attrs, error) {
	if err := f.Close(); err != nil {
		return driver.Attrs{}, fmt.Errorf("close %s: %w", key, err)
	}
	if !durable {
		s.addPending(key)
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
	if err := f.Chmod(fileMode); err != nil {
		return driver.Attrs{}, err
	}
	if fi, err = s.placeNew(ctx, key, tmp, t, durable); err != nil {
		return driver.Attrs{}, err
	}
	done = true
	return s.finish(key, f, fi, durable)
}

// place renames the temporary file tmp to key, creating key's folder
// when the rename finds it missing (the usual folder exists: one rename,
// no look-up before it); a Delete may remove a new, empty folder before
// the rename: then it tries again. durable: as makeFolder's.
func (s *Sink) place(tmp, key string, durable bool) error {
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
// just after cur's when that is not earlier, fsyncs it (when durable) and
// returns its FileInfo.
func stamp(t tempFile, cur fs.FileInfo, durable bool) (fs.FileInfo, error) {
	mtime := time.Now()
	if cur != nil && !mtime.After(cur.ModTime()) {
		mtime = cur.ModTime().Add(time.Nanosecond)
	}
	if err := t.dir.Chtimes(t.name, time.Time{}, mtime); err != nil {
		return nil, err
	}
	if durable {
		if err := syncFile(t.f); err != nil {
			return nil, fmt.Errorf("sync temporary file: %w", err)
		}
	}
	fi, err := t.f.Stat()
	if err != nil {
		return nil, err
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

// Get opens the regular file at key.
func (s *Sink) Get(ctx context.Context, key string) (io.ReadCloser, driver.Attrs, error) {
	if _, err := s.Stat(ctx, key); err != nil {
		return nil, driver.Attrs{}, err
	}
	f, err := s.root.Open(key)
	if err != nil {
		if missing(err) {
			return nil, driver.Attrs{}, driver.ErrNotFound
		}
		return nil, driver.Attrs{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, driver.Attrs{}, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, driver.Attrs{}, driver.ErrNotFound
	}
	return f, attrs(key, fi), nil
}

// Stat returns the Attrs of the regular file at key; anything else
// (nothing, a folder, a symbolic link) is ErrNotFound.
func (s *Sink) Stat(_ context.Context, key string) (driver.Attrs, error) {
	if reserved(key) {
		return driver.Attrs{}, driver.ErrNotFound
	}
	fi, err := s.root.Lstat(key)
	if err != nil {
		if missing(err) {
			return driver.Attrs{}, driver.ErrNotFound
		}
		return driver.Attrs{}, err
	}
	if !fi.Mode().IsRegular() {
		return driver.Attrs{}, driver.ErrNotFound
	}
	return attrs(key, fi), nil
}

// List walks the folder of prefix (the part up to its last '/') and returns
// the regular files whose key starts with prefix, sorted by key. Names
// starting with '.' (the lock, temporary files, foreign hidden files) and
// files whose path is not a valid key are skipped.
func (s *Sink) List(ctx context.Context, prefix string) ([]driver.Attrs, error) {
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	var out []driver.Attrs
	err := fs.WalkDir(s.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && missing(err) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) || sink.CheckKey(p) != nil {
			return nil
		}
		fi, err := d.Info()
		if missing(err) {
			return nil // removed since the folder was read
		}
		if err != nil {
			return err
		}
		out = append(out, attrs(p, fi))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b driver.Attrs) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete removes the file at key, then the folders above it that it left
// empty, up to (not including) the sink's folder, and fsyncs the folder
// that remains. A missing file is not an error.
func (s *Sink) Delete(_ context.Context, key string) error {
	if reserved(key) {
		return nil
	}
	fi, err := s.root.Lstat(key)
	if missing(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return nil // a folder is not an object
	}
	if err := s.root.Remove(key); err != nil && !missing(err) {
		return err
	}
	p := s.prune(path.Dir(key))
	if err := (folder{r: s.root}).syncPath(p); err != nil && !missing(err) {
		return err
	}
	return nil
}

// prune removes the folder p if it is empty, then its parents that are
// left empty, up to (not including) the sink's folder, and returns the
// first folder it did not remove ("." for the sink's).
func (s *Sink) prune(p string) string {
	for ; p != "."; p = path.Dir(p) {
		if fi, err := s.root.Lstat(p); err != nil || !fi.IsDir() {
			break // gone, or a file (never removed here)
		}
		// Remove fails on a folder that is not empty. (A Put whose
		// folder goes meanwhile makes it again: see place.)
		if err := s.root.Remove(p); err != nil && !missing(err) {
			break
		}
	}
	return p
}

// Package filesink is a sink driver (driver.Bucket) on a local folder:
// the key "a/b/c.csv" is the file DIR/a/b/c.csv. Callers use it through
// the portable sink.Bucket: sink.New(s), s from New(dir).
//
// Every file operation goes through an os.Root on DIR, or, for a Put's
// own steps on Linux, through descriptors opened below it with
// openat2(2) RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (fast.go), so no key,
// symbolic link or concurrent rename can reach outside the folder. Files
// are 0640 and the folders it creates 0750 (less when the umask says so).
//
// A Put is atomic: the body goes to a temporary file outside the visible
// tree (in DIR/.reportjob-tmp/, see temp.go), which is fsynced and renamed
// over the target, and the target's folder is fsynced. A Put with
// PutOptions.Defer leaves out those fsyncs (and on Linux writes an
// unnamed file in the target's folder, which it links at the key once
// complete: unnamed.go) and records the key: Sync
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
	dirFD   int      // dirFile's descriptor (fast.go)
	// sem serializes this process's conditional puts before they take
	// the flock (which excludes other processes).
	sem chan struct{}

	tmpMu   sync.Mutex
	tmpDir  string   // this Sink's temporary folder, "" until the first Put
	tmpRoot *os.Root // tmpDir, where Put creates and stamps its files
	tmpLock *os.File // its .lock, flocked while the Sink is open
	tmpFile *os.File // tmpDir, open (fast.go)
	tmpFD   int      // tmpFile's descriptor, -1 without the fast path
	tmpSeq  atomic.Uint64

	// Deferred Puts (sync.go).
	pendMu sync.Mutex
	// pending are the keys stored by deferred Puts, not yet synced (a
	// key Put twice may be there twice): a list, not a set, since a big
	// period puts 400,000 objects before its Sync.
	pending []string
	// pendingDirs are the folders that deferred Deletes removed entries
	// from, not yet synced.
	pendingDirs map[string]struct{}
	// deferred is set by the first deferred Put, before it creates a
	// folder: from then on a durable Put fsyncs every folder of its key,
	// which may have been created by a deferred Put and not be durable yet.
	deferred atomic.Bool
	// flush writes deferred Puts' files out in the background (flush.go).
	flush flusher
	// noUnnamed sends every Put to the temporary folder once an unnamed
	// file could not be made or linked here (unnamed.go).
	noUnnamed atomic.Bool
	// folders keeps the descriptors of the folders unnamed-file Puts
	// wrote to last (folders.go).
	folders folderCache
}

var (
	_ driver.Bucket          = (*Sink)(nil)
	_ driver.FilePutter      = (*Sink)(nil)
	_ driver.Syncer          = (*Sink)(nil)
	_ driver.DeferredDeleter = (*Sink)(nil)
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
	s := &Sink{dir: abs, root: root, dirFile: dirFile, dirFD: int(dirFile.Fd()), sem: make(chan struct{}, 1)}
	s.flush.usable = sync.OnceValue(func() bool { return syncfsUsable(dirFile) == nil })
	s.sweepTemp()
	return s, nil
}

// Close removes the Sink's temporary folder and releases the folder. The
// Sink must not be used afterwards.
func (s *Sink) Close() error {
	s.flush.wg.Wait()
	s.folders.close()
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
	return s.ListAfter(ctx, prefix, "")
}

// ListAfter is List less the keys at or before after: the walk skips the
// folders whose keys all sort before it (driver.AfterLister).
func (s *Sink) ListAfter(ctx context.Context, prefix, after string) ([]driver.Attrs, error) {
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
			if p+"/" < after && !strings.HasPrefix(after, p+"/") {
				return fs.SkipDir // every key in it sorts before after
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) || p <= after || sink.CheckKey(p) != nil {
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
	return s.delete(key, true)
}

// DeleteDeferred is Delete without the fsync of the folder: the next Sync
// makes the removal durable (driver.DeferredDeleter).
func (s *Sink) DeleteDeferred(_ context.Context, key string) error {
	return s.delete(key, false)
}

// delete removes the file at key and the folders it leaves empty, then
// fsyncs the folder left, or records it for Sync (durable false).
func (s *Sink) delete(key string, durable bool) error {
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
	if !durable {
		s.addPendingDir(p)
		return nil
	}
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

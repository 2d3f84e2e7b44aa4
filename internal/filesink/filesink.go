// Package filesink is a report.Sink on a local folder. Keys map to paths
// below the folder. Writes are atomic: a hidden temporary file in the
// target's folder, fsynced, renamed over the target, and the folder fsynced.
package filesink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/reportjob/reportjob/internal/report"
)

const (
	fileMode = 0o644
	dirMode  = 0o755
	// tmpMark is in every temporary file's name. It is outside the key
	// alphabet, so no key ever names a temporary file and List skips them.
	tmpMark = "~tmp"
)

// Sink is a report.Sink on a local folder.
type Sink struct {
	dir string // absolute, cleaned
}

var _ report.Sink = (*Sink)(nil)

// New returns a sink on dir, creating it (and its parents) if needed.
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
	return &Sink{dir: abs}, nil
}

// Dir returns the sink's absolute folder.
func (s *Sink) Dir() string { return s.dir }

// path returns the file path of key, checking that it stays inside the
// sink's folder.
func (s *Sink) path(key string) (string, error) {
	if err := report.CheckKey(key); err != nil {
		return "", err
	}
	p := filepath.Join(s.dir, filepath.FromSlash(key))
	if !within(s.dir, p) {
		return "", fmt.Errorf("%w %q: outside %s", report.ErrBadKey, key, s.dir)
	}
	return p, nil
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// NewWriter starts writing key into a temporary file beside its target.
func (s *Sink) NewWriter(ctx context.Context, key, contentType string) (report.ObjectWriter, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("write %s: %w", p, err)
	}
	dir, base := filepath.Split(p)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("write %s: %w", p, err)
	}
	f, err := os.CreateTemp(dir, "."+base+tmpMark+"*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Chmod(fileMode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", p, err)
	}
	return &writer{ctx: ctx, path: p, f: f, buf: bufio.NewWriterSize(f, 64<<10)}, nil
}

// writer is an object being written to a temporary file.
type writer struct {
	ctx  context.Context
	path string
	f    *os.File // nil once committed or aborted
	buf  *bufio.Writer
	err  error // first write error
}

var errClosed = errors.New("object writer already committed or aborted")

func (w *writer) Write(p []byte) (int, error) {
	if w.f == nil {
		return 0, fmt.Errorf("write %s: %w", w.path, errClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
		return 0, w.err
	}
	n, err := w.buf.Write(p)
	if err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
	}
	return n, w.err
}

// Commit flushes and fsyncs the temporary file, renames it over the
// target and fsyncs the folder. On any error the temporary file is removed.
func (w *writer) Commit() error {
	if w.f == nil {
		return nil
	}
	err := w.commit()
	if err != nil {
		w.discard()
		return err
	}
	w.f = nil
	return nil
}

func (w *writer) commit() error {
	if w.err != nil {
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", w.path, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", w.path, err)
	}
	if err := os.Rename(w.f.Name(), w.path); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := syncDir(filepath.Dir(w.path)); err != nil {
		return fmt.Errorf("write %s: sync folder: %w", w.path, err)
	}
	return nil
}

// Abort removes the temporary file.
func (w *writer) Abort() error {
	if w.f == nil {
		return nil
	}
	err := w.discard()
	if err != nil {
		return fmt.Errorf("abort %s: %w", w.path, err)
	}
	return nil
}

func (w *writer) discard() error {
	name := w.f.Name()
	w.f.Close() // may already be closed
	w.f = nil
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Open opens the file at key.
func (s *Sink) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("open %s: %w", p, report.ErrNotFound)
		}
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file: %w", p, report.ErrNotFound)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return f, nil
}

// List walks the folder of prefix (the part up to its last '/') and returns
// the regular files whose key starts with prefix, sorted by key. Files whose
// path is not a valid key (temporary files, anything foreign) are skipped.
func (s *Sink) List(ctx context.Context, prefix string) ([]report.ObjectInfo, error) {
	if err := report.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	root := s.dir
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		root = filepath.Join(s.dir, filepath.FromSlash(prefix[:i]))
		if !within(s.dir, root) {
			return nil, fmt.Errorf("%w: prefix %q: outside %s", report.ErrBadKey, prefix, s.dir)
		}
	}
	var out []report.ObjectInfo
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) || report.CheckKey(key) != nil {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since the folder was read
		}
		if err != nil {
			return err
		}
		out = append(out, report.ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s prefix %q: %w", s.dir, prefix, err)
	}
	slices.SortFunc(out, func(a, b report.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

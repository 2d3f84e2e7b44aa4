package filesink

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// A deferred Put's own path on Linux: an unnamed file. The body goes to a
// file that open(2) with O_TMPFILE makes in the key's folder, with no
// name; linkat(2) names it key once it is complete and stamped. Against
// the temporary file of the other path (made in the Sink's temporary
// folder, then renamed to key), that is one folder entry added instead of
// three changes (added, removed, added elsewhere), no rename, and no
// write lock on the temporary folder, which every concurrent Put of the
// Sink takes to create its file there (a profile of a 20,000-agency run,
// two minutes after a large delete, had 4 % of its CPU spinning on that
// lock while the inode allocator held it). A process killed before the
// link leaves nothing behind, not even a temporary file for New to sweep.
// The folder's descriptor is kept for the Puts after it (folders.go).
//
// It is taken only by a deferred Put (its file and name are made durable
// by Sync, as any deferred Put's: the folder is resolved with
// RESOLVE_NO_XDEV, so the file is on DIR's file system, which syncfs
// writes) of a key whose folder the fast path resolves (fast.go). A link
// only ever adds a name: when key exists (or its folder was removed since
// it was opened), the complete file is linked into the temporary folder
// instead and renamed to key as the other path renames, which replaces
// atomically. Where the file system or kernel has no O_TMPFILE, or the
// process can link a descriptor neither with AT_EMPTY_PATH (it needs
// CAP_DAC_READ_SEARCH) nor through /proc/self/fd, the Put takes the
// other path, and so do the Sink's later Puts.

// putUnnamed stores body at key through an unnamed file (see above), for
// a deferred Put. It answers errSlow, having left nothing at key, when
// this path cannot be used here: the caller takes the other path.
func (s *Sink) putUnnamed(ctx context.Context, key string, body io.ReadSeeker, size int64) (driver.Attrs, error) {
	if s.noUnnamed.Load() || s.dirFD < 0 || !fastKey(key) {
		return driver.Attrs{}, errSlow
	}
	rel, name := path.Dir(key), path.Base(key)
	f, held, err := s.createIn(rel, key)
	if err != nil {
		return driver.Attrs{}, err
	}
	// The folder's descriptor goes back to s.folders; stale drops it.
	dirfd, stale := s.dirFD, false
	if held != nil {
		dirfd = held.fd
		defer func() { s.folders.release(held, stale) }()
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			s.prune(rel)
			stale = true
		}
	}()
	if err := writeBody(ctx, f, body, size); err != nil {
		return driver.Attrs{}, err
	}
	fi, err := stamp(tempFile{f: f, dirfd: -1}, nil, false)
	if err != nil {
		return driver.Attrs{}, err
	}
	if err := ctx.Err(); err != nil {
		return driver.Attrs{}, err
	}
	if beforeLink != nil {
		beforeLink(key)
	}
	if err := linkUnnamed(f, dirfd, name); err != nil {
		// key exists, its folder is gone, or the link was refused.
		stale = !errors.Is(err, fs.ErrExist)
		if err := s.placeUnnamed(tempFile{f: f, dirfd: -1}, key); err != nil {
			return driver.Attrs{}, err
		}
	}
	done = true
	return s.finish(key, f, fi, false)
}

// createIn makes the unnamed file for key in its folder rel, whose
// descriptor comes from s.folders (held; nil for DIR itself, rel "."):
// the caller hands it back. A kept folder that a Delete removed refuses
// new files (EPERM, ENOENT): it is dropped and resolved again, once.
// errSlow when this path cannot be used here.
func (s *Sink) createIn(rel, key string) (f *os.File, held *heldFolder, err error) {
	for attempt := 0; ; attempt++ {
		dirfd := s.dirFD
		if rel != "." {
			if held, err = s.folders.acquire(rel, func() (int, error) { return s.openFolder(rel, true, false) }); err != nil {
				// The other path fails or succeeds as it always did.
				return nil, nil, errSlow
			}
			dirfd = held.fd
		}
		f, err = createUnnamed(dirfd, filepath.Join(s.dir, filepath.FromSlash(key)))
		switch {
		case err == nil:
			return f, held, nil
		case errors.Is(err, errSlow):
			s.noUnnamed.Store(true)
			if held != nil {
				s.folders.release(held, false)
			}
			return nil, nil, errSlow
		case held == nil:
			return nil, nil, errSlow
		}
		s.folders.release(held, true)
		if attempt > 0 {
			return nil, nil, errSlow
		}
	}
}

// beforeLink, when set (a test), is called by putUnnamed just before it
// links the complete file.
var beforeLink func(key string)

// placeUnnamed names the complete unnamed file t.f in the Sink's
// temporary folder and renames it to key (place), for a key its link
// could not take. errSlow, with the Sink's later Puts sent to the other
// path, when the kernel links no descriptor at all.
func (s *Sink) placeUnnamed(t tempFile, key string) error {
	dir, r, dirfd, err := s.tempFolder()
	if err != nil {
		return err
	}
	name := tmpPrefix + strconv.FormatUint(s.tmpSeq.Add(1), 16)
	if err := linkUnnamed(t.f, dirfd, name); err != nil {
		if errors.Is(err, errSlow) {
			s.noUnnamed.Store(true)
		}
		return err
	}
	t.dir, t.dirfd, t.name = r, dirfd, name
	if err := s.place(dir+"/"+name, t, key, false); err != nil {
		r.Remove(name)
		return err
	}
	return nil
}

package filesink

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Temporary files live outside the visible tree, in DIR/.reportjob-tmp/,
// one folder per open Sink: DIR/.reportjob-tmp/ID/ holds a .lock file
// that the Sink keeps flock(2)ed while it is open, and its temporary
// files (.reportjob-tmp-RANDOM). The kernel releases the lock when the
// process dies, however it dies, so a folder whose lock can be taken
// belongs to a dead process: New removes those, and so a Put killed
// half-way leaves nothing behind once the sink is opened again. A live
// Sink's folder is never removed. A Put renames its file from there to
// its key (the same file system: DIR must not have mount points inside).
const (
	tmpArea     = reservedPrefix + "tmp"
	tmpLockName = ".lock"
	// tmpNewPrefix names a folder being set up (not yet locked): never
	// looked at by the sweep unless older than tmpNewMaxAge (its process
	// died in the microseconds between mkdir and flock).
	tmpNewPrefix = ".new-"
	tmpNewMaxAge = time.Hour
)

func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tempFolder returns the Sink's own temporary folder (relative to DIR),
// a root on it and its descriptor, making and locking it on first use.
func (s *Sink) tempFolder() (string, *os.Root, int, error) {
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
	if s.tmpDir != "" {
		return s.tmpDir, s.tmpRoot, s.tmpFD, nil
	}
	if err := s.root.MkdirAll(tmpArea, dirMode); err != nil {
		return "", nil, -1, fmt.Errorf("temporary folder: %w", err)
	}
	id := randomHex()
	fresh := path.Join(tmpArea, tmpNewPrefix+id)
	if err := s.root.Mkdir(fresh, dirMode); err != nil {
		return "", nil, -1, fmt.Errorf("temporary folder: %w", err)
	}
	f, err := s.root.OpenFile(path.Join(fresh, tmpLockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err == nil {
		err = lockNow(f)
		if err != nil {
			f.Close()
		}
	}
	final := path.Join(tmpArea, id)
	if err == nil {
		err = s.root.Rename(fresh, final)
		if err != nil {
			f.Close()
		}
	}
	var r *os.Root
	var d *os.File
	if err == nil {
		r, err = s.root.OpenRoot(final)
		if err == nil {
			// Opened through the root that it is (fast.go).
			if d, err = r.Open("."); err != nil {
				r.Close()
			}
		}
		if err != nil {
			f.Close()
			fresh = final
		}
	}
	if err != nil {
		s.root.RemoveAll(fresh)
		return "", nil, -1, fmt.Errorf("temporary folder: %w", err)
	}
	s.tmpDir, s.tmpRoot, s.tmpLock, s.tmpFile, s.tmpFD = final, r, f, d, int(d.Fd())
	return final, r, s.tmpFD, nil
}

// tempFile is an open temporary file: name in the root dir (the Sink's
// temporary folder), whose descriptor is dirfd (-1: none, fast.go).
type tempFile struct {
	f     *os.File
	dir   *os.Root
	dirfd int
	name  string
}

// createTemp creates a temporary file in the Sink's temporary folder and
// returns its path relative to DIR. The file is created through the
// folder's own root (one name to resolve, not three), and named by a
// counter: the folder is this Sink's alone.
func (s *Sink) createTemp() (string, tempFile, error) {
	dir, r, dirfd, err := s.tempFolder()
	if err != nil {
		return "", tempFile{}, err
	}
	name := tmpPrefix + strconv.FormatUint(s.tmpSeq.Add(1), 16)
	f, err := createChild(dirfd, name, s.tmpPath(dir, name))
	if errors.Is(err, errSlow) {
		f, err = r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	}
	if err != nil {
		return "", tempFile{}, fmt.Errorf("create temporary file: %w", err)
	}
	return dir + "/" + name, tempFile{f: f, dir: r, dirfd: dirfd, name: name}, nil
}

// linkTemp makes a temporary file of the Sink's temporary folder a hard
// link to the file at src and opens it, as createTemp does (see linkInto
// for the errors).
func (s *Sink) linkTemp(src string) (string, tempFile, error) {
	dir, r, dirfd, err := s.tempFolder()
	if err != nil {
		return "", tempFile{}, err
	}
	name := tmpPrefix + strconv.FormatUint(s.tmpSeq.Add(1), 16)
	if err := linkInto(r, dirfd, name, src); err != nil {
		return "", tempFile{}, err
	}
	f, err := openRWChild(dirfd, name, s.tmpPath(dir, name))
	if err != nil {
		// No fast path, or not a plain file (src a symbolic link, linked
		// as such): os.Root decides, as it did.
		f, err = r.OpenFile(name, os.O_RDWR, 0)
	}
	if err != nil {
		r.Remove(name)
		return "", tempFile{}, fmt.Errorf("open linked file: %w", err)
	}
	return dir + "/" + name, tempFile{f: f, dir: r, dirfd: dirfd, name: name}, nil
}

// tmpPath is the name of the temporary file name in the temporary folder
// dir, as os.Root names the files it opens.
func (s *Sink) tmpPath(dir, name string) string {
	return s.dir + string(filepath.Separator) + filepath.FromSlash(dir) + string(filepath.Separator) + name
}

// closeTemp removes the Sink's temporary folder and releases its lock.
func (s *Sink) closeTemp() {
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
	if s.tmpDir == "" {
		return
	}
	s.tmpFile.Close()
	s.tmpRoot.Close()
	s.root.RemoveAll(s.tmpDir)
	s.tmpLock.Close()
	s.tmpDir, s.tmpRoot, s.tmpLock, s.tmpFile, s.tmpFD = "", nil, nil, nil, -1
}

// sweepTemp removes the temporary folders of dead processes (see above).
// It is best effort: what it cannot remove now, a later New will.
func (s *Sink) sweepTemp() {
	entries, err := fs.ReadDir(s.root.FS(), tmpArea)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := path.Join(tmpArea, e.Name())
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(e.Name(), tmpNewPrefix) {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > tmpNewMaxAge {
				s.root.RemoveAll(p)
			}
			continue
		}
		if s.deadTemp(p) {
			s.root.RemoveAll(p)
		}
	}
}

// deadTemp reports whether the lock of the temporary folder p can be taken
// (its Sink's process is gone), or the folder has no lock file (it was
// being removed).
func (s *Sink) deadTemp(p string) bool {
	f, err := s.root.OpenFile(path.Join(p, tmpLockName), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close() // releases the lock taken
	return tryLock(f)
}

package filesink

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// The per-object fast path. Each os.Root call resolves its path again,
// one openat(2) per folder on the way, and adds look-ups of its own: a Put
// of agencies/agency=A/period=P/file.csv through Root.Rename opened and
// closed the 2 folders of its temporary file and the 3 of its key, and
// lstat'ed the target (missing, for a new object); Root.Chtimes
// readlink'ed the temporary file (not a link); every file Root.OpenFile
// opened was offered to the runtime's poller (refused: a regular file).
// On Linux, a Put instead:
//
//   - creates or links its temporary file with openat(2)/linkat(2) in the
//     descriptor of the Sink's temporary folder, held while the Sink is
//     open (the folder was opened through the root; the name is one plain
//     segment, O_EXCL or O_NOFOLLOW);
//   - sets its time and reads it through the file's own descriptor;
//   - opens the key's folder with one openat2(2), RESOLVE_BENEATH,
//     RESOLVE_NO_SYMLINKS and RESOLVE_NO_XDEV from the descriptor of DIR:
//     the kernel keeps the whole resolution below DIR and on its file
//     system, even against concurrent renames, and refuses any symbolic
//     link on the way (os.Root follows those that stay inside DIR: such a
//     key takes the os.Root path, as does every key with an empty, "." or
//     ".." segment; a mount point on the way is refused, and the os.Root
//     path then fails at its rename, as it always did);
//   - renames the temporary file into that descriptor, renameat(2) with a
//     plain name, which neither follows nor leaves the folder;
//   - when the folder is missing, creates it (and its missing parents) with
//     mkdirat(2) in its parent's descriptor, opened the same way, and opens
//     it with openat(2), O_NOFOLLOW|O_DIRECTORY, in that descriptor.
//
// A deferred Put makes no temporary file: it writes an unnamed one in the
// key's folder and links it there (unnamed.go).
//
// The durability steps are the same fsyncs of the same files and folders,
// at the same points. Any refusal on the way (a symbolic link, a file
// where a folder should be, a folder where the object should be, openat2
// missing) falls back to the os.Root path, which then fails or succeeds as
// it always did: the fast path only ever does what that path would do.

// errSlow says that the fast path cannot do a step here: the caller takes
// the os.Root path.
var errSlow = errors.New("file sink: no fast path")

// noOpenat2 is set once openat2(2) is found missing (Linux before 5.6) or
// refused (a seccomp filter): from then on folders are resolved by os.Root
// (a test sets it to run the os.Root path).
var noOpenat2 atomic.Bool

// fastKey reports whether key's folder can be resolved by the fast path:
// a relative path of plain names ("" is DIR itself).
func fastKey(key string) bool {
	if key == "" || strings.HasPrefix(key, "/") {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// openFolder returns a descriptor of the folder rel (a clean relative path
// of plain names, not "."), creating it and its missing parents when
// create is set, top-down, and fsyncing the parent of each folder it
// creates when durable is set (as makeFolder does). The caller closes it.
func (s *Sink) openFolder(rel string, create, durable bool) (int, error) {
	fd, err := openBeneath(s.dirFD, rel)
	if err == nil || !create || !missing(err) {
		return fd, err
	}
	parent, name := path.Dir(rel), path.Base(rel)
	pfd := s.dirFD
	if parent != "." {
		if pfd, err = s.openFolder(parent, true, durable); err != nil {
			return -1, err
		}
		defer closeFD(pfd)
	}
	if err := mkdirChild(pfd, name); err != nil && !errors.Is(err, fs.ErrExist) {
		return -1, fmt.Errorf("create folder: %w", err)
	}
	if durable {
		// Made meanwhile by another Put, which may not have fsynced its
		// parent yet: this Put does so too before relying on it.
		if err := s.syncFD(pfd, parent); err != nil {
			return -1, err
		}
	}
	return openChild(pfd, name)
}

// syncFD fsyncs the folder fd (rel), through syncFile.
func (s *Sink) syncFD(fd int, rel string) error {
	f, err := dupFile(fd, filepath.Join(s.dir, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return syncFolder(f)
}

// placeFast renames the temporary file t to key by the fast path (see
// above); errSlow (or any error: the os.Root path decides) when it could
// not. A folder removed by a Delete between its creation and the rename
// is made again, as place does.
func (s *Sink) placeFast(t tempFile, key string, durable bool) error {
	if t.dirfd < 0 || !fastKey(key) {
		return errSlow
	}
	rel, name := path.Dir(key), path.Base(key)
	for attempt := 0; ; attempt++ {
		fd := s.dirFD
		if rel != "." {
			var err error
			if fd, err = s.openFolder(rel, true, durable); err != nil {
				return err
			}
		}
		err := renameChild(t.dirfd, t.name, fd, name)
		if fd != s.dirFD {
			closeFD(fd)
		}
		if err == nil || !missing(err) || rel == "." || attempt > mkdirRetries {
			return err
		}
	}
}

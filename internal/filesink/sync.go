package filesink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// Deferred durability (driver.Syncer).
//
// A Put is made durable by three or four fsyncs: the file, the folder it
// is renamed into, and the parent of each folder it creates. Each fsync
// costs at least a flush of the device's cache (ext4 on this project's
// test machines: 0.1 to 0.6 ms, even for a file with nothing left to
// write): publishing a period of 500 agencies, one small file each in a
// new folder, spent 0.4 s in 2,000 fsyncs on files that took 60 ms to
// write. A Put with PutOptions.Defer leaves them out and records its key;
// Sync then makes them all durable at once:
//
//   - on Linux 5.8 or later, when DIR is on a file system whose syncfs is
//     trusted (syncfsUsable: ext2-4, XFS, Btrfs, F2FS, tmpfs), with one
//     syncfs(2) of it, through a descriptor of DIR opened by New, so that
//     a write-back error since then is reported (a failed write of a
//     deferred file cannot go unseen). Every deferred file and folder is
//     on that file system: a Put renames its file from DIR/.reportjob-tmp,
//     and a rename cannot cross file systems, or makes it unnamed in a
//     folder that openat2 resolved with RESOLVE_NO_XDEV (unnamed.go).
//     syncfs also writes whatever else is dirty on that file system
//     (other programs' files): on a busy shared disk it may take longer
//     than the fsyncs would;
//   - anywhere else (older kernels, FUSE, SMB, NFS, ZFS, overlayfs, other
//     systems) by fsyncing every recorded file and every folder on the way
//     to it (each once), syncWorkers at a time.
//
// A deferred Put of a file of writebackMin bytes or more also starts its
// write-out without waiting (on Linux, sync_file_range(2):
// startWriteback), so that the disk writes the period's large files while
// the job encodes the next ones; Sync then waits for what is left (at 1M
// line items, 0.10-0.23 s before, 0.02-0.03 s after). A small file is
// left to the kernel's own write-back: started for each of the 120,000
// files of a period and month of 20,000 agencies, it cost 7 of the run's
// 17 s of system time and made the run 4 s slower, Sync included.
// Instead, every flushEvery bytes of deferred files start one syncfs of
// the whole file system in the background (flush.go).
//
// A deferred Delete (DeleteDeferred: a publication's cleanup) removes the
// file and the folders it leaves empty at once, and records the folder
// left; Sync makes the removals durable in the same round (syncfs, or an
// fsync of each such folder).
//
// The rule that keeps a durable Put durable: a folder a deferred Put
// created may not be durable in its parent until the next Sync, so once
// the Sink has seen a deferred Put, every durable Put fsyncs all the
// folders of its key, not only the one it was renamed into.

// writebackMin is the smallest deferred file whose write-out a Put
// starts (a variable for the tests).
var writebackMin int64 = 1 << 20

// syncWorkers bounds the fsyncs Sync has in flight.
const syncWorkers = 8

// syncFile fsyncs f, syncFilesystem writes out f's file system (syncFS):
// every fsync and syncfs of the driver goes through them (a test records
// them, or makes syncfs unsupported or fail).
var (
	syncFile       = (*os.File).Sync
	syncFilesystem = syncFS
	// writeback starts writing out a deferred Put's file (startWriteback).
	writeback = startWriteback
)

// durable reports whether a Put with opts must be durable when it
// returns; for a deferred one it notes that the Sink has had one.
func (s *Sink) durable(opts driver.PutOptions) bool {
	if !opts.Defer || opts.IfNoneMatch || opts.IfMatch != "" {
		return true
	}
	s.deferred.Store(true)
	return false
}

// addPendingDir records the folder rel, which a deferred Delete removed
// an entry from, for the next Sync.
func (s *Sink) addPendingDir(rel string) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	if s.pendingDirs == nil {
		s.pendingDirs = make(map[string]struct{})
	}
	s.pendingDirs[rel] = struct{}{}
}

// addPending records key, stored by a deferred Put, for the next Sync.
func (s *Sink) addPending(key string) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	s.pending = append(s.pending, key)
}

// syncFolders makes the name of key, just renamed into its folder,
// durable: it fsyncs that folder, and, once the Sink has had deferred
// Puts, every folder above it.
func (s *Sink) syncFolders(key string) error {
	d := folder{r: s.root}
	if !s.deferred.Load() {
		return d.syncPath(path.Dir(key))
	}
	for _, rel := range folders(key) {
		if err := d.syncPath(rel); err != nil {
			return err
		}
	}
	return nil
}

// folders returns the folders of key, from its own up to ".", DIR.
func folders(key string) []string {
	var out []string
	for rel := path.Dir(key); ; rel = path.Dir(rel) {
		out = append(out, rel)
		if rel == "." {
			return out
		}
	}
}

// Sync implements driver.Syncer: it makes durable the files that deferred
// Puts stored since the last Sync, and the folders on their paths, and
// the removals of deferred Deletes (see above). A file or folder gone
// meanwhile (deleted, its key replaced and pruned) needs nothing. On
// error they are forgotten all the same: a later Sync could not tell
// whether they were written (driver.Syncer).
func (s *Sink) Sync(ctx context.Context) error {
	s.pendMu.Lock()
	pending, pendingDirs := s.pending, s.pendingDirs
	s.pending, s.pendingDirs = nil, nil
	s.pendMu.Unlock()
	if len(pending) == 0 && len(pendingDirs) == 0 {
		return nil
	}
	err := ctx.Err()
	if err == nil {
		if err = syncFilesystem(s.dirFile); errors.Is(err, errors.ErrUnsupported) {
			err = s.syncPaths(ctx, pending, pendingDirs)
		}
	}
	return err
}

// syncPaths fsyncs the files of pending, then every folder on their paths
// and the folders of pendingDirs (a deferred Delete's).
func (s *Sink) syncPaths(ctx context.Context, pending []string, pendingDirs map[string]struct{}) error {
	slices.Sort(pending)
	files := slices.Compact(pending)
	seen := map[string]bool{}
	var dirs []string
	for _, key := range files {
		for _, rel := range folders(key) {
			if seen[rel] {
				break // and so are the folders above it
			}
			seen[rel] = true
			dirs = append(dirs, rel)
		}
	}
	// A deferred Delete's folder: its own entries changed, not the
	// folders above it.
	for _, rel := range slices.Sorted(maps.Keys(pendingDirs)) {
		if !seen[rel] {
			seen[rel] = true
			dirs = append(dirs, rel)
		}
	}
	// The deepest first: a folder's new entries, then its own name.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	if err := s.syncEach(ctx, files); err != nil {
		return err
	}
	return s.syncEach(ctx, dirs)
}

// syncEach opens and fsyncs each of rels (paths under DIR),
// syncWorkers at a time; a missing one is skipped.
func (s *Sink) syncEach(ctx context.Context, rels []string) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	work := make(chan string)
	for range min(syncWorkers, len(rels)) {
		wg.Go(func() {
			for rel := range work {
				err := s.syncOne(rel)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, rel := range rels {
		if ctx.Err() != nil {
			break
		}
		work <- rel
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (s *Sink) syncOne(rel string) error {
	f, err := s.root.Open(rel)
	if missing(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", rel, err)
	}
	err = syncFile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", rel, err)
	}
	return nil
}

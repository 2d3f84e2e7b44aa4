package filesink

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// folder is an open folder of the sink (the root).
type folder struct {
	r *os.Root
}

// makeFolder creates the folder rel and its missing parents, top-down,
// and fsyncs the parent of each folder it creates, so that the new names
// are durable (unless durable is false: a deferred Put, whose Sync fsyncs
// every folder of its key). Folders that exist are left alone (their names were made
// durable by whoever made them): for a new agency folder under an
// existing period folder that is one mkdir and one fsync, not an fsync
// of every folder up to DIR.
func (s *Sink) makeFolder(rel string, durable bool) error {
	err := s.root.Mkdir(rel, dirMode)
	if errors.Is(err, fs.ErrNotExist) && path.Dir(rel) != "." {
		if err := s.makeFolder(path.Dir(rel), durable); err != nil {
			return err
		}
		err = s.root.Mkdir(rel, dirMode)
	}
	if errors.Is(err, fs.ErrExist) {
		// Made meanwhile by another Put, which may not have fsynced its
		// parent yet: this Put does so too before relying on it.
		if fi, serr := s.root.Lstat(rel); serr == nil && fi.IsDir() {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("create folder: %w", err)
	}
	if !durable {
		return nil
	}
	return (folder{r: s.root}).syncPath(path.Dir(rel))
}

// syncPath fsyncs the folder rel below d.
func (d folder) syncPath(rel string) error {
	f, err := d.r.Open(rel)
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return syncFolder(f)
}

// syncFolder fsyncs the open folder f and closes it.
func syncFolder(f *os.File) error {
	err := syncFile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return nil
}

package filesink

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// folder is an open folder of the sink: the root itself or a sub-root.
type folder struct {
	r   *os.Root
	own bool // r was opened for this folder and must be closed
}

func (d folder) close() {
	if d.own {
		d.r.Close()
	}
}

// sync fsyncs the folder.
func (d folder) sync() error { return d.syncPath(".") }

// openFolder opens the folder rel, creating it when missing.
func (s *Sink) openFolder(rel string) (folder, error) {
	if rel == "" {
		return folder{r: s.root}, nil
	}
	r, err := s.root.OpenRoot(rel)
	if err == nil {
		return folder{r: r, own: true}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return folder{}, fmt.Errorf("open folder: %w", err)
	}
	if err := s.root.MkdirAll(rel, dirMode); err != nil {
		return folder{}, fmt.Errorf("create folder: %w", err)
	}
	// Make the new folders' names durable: fsync every folder above rel.
	for p := path.Dir(rel); ; p = path.Dir(p) {
		if err := (folder{r: s.root}).syncPath(p); err != nil {
			return folder{}, err
		}
		if p == "." {
			break
		}
	}
	r, err = s.root.OpenRoot(rel)
	if err != nil {
		return folder{}, fmt.Errorf("open folder: %w", err)
	}
	return folder{r: r, own: true}, nil
}

// syncPath fsyncs the folder rel below d.
func (d folder) syncPath(rel string) error {
	f, err := d.r.Open(rel)
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return nil
}

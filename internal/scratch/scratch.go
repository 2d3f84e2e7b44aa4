// Package scratch makes the temp folders of a run (spill runs, encoded
// files before upload) and removes those of runs that died.
//
// A run's folder is TMP/reportjob-JOB-RUNID; the run holds an exclusive
// flock on the folder's .lock file for as long as it lives. The kernel
// releases that lock when the process exits, however it exits, so a
// folder whose lock can be taken belongs to a dead run and is removed by
// Sweep. Nothing else is needed on one host; a folder on a temp file system
// shared between hosts (unusual) is only ever removed by a run on the host
// that made it, since flock is not shared across hosts over every file
// system.
package scratch

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const lockName = ".lock"

// Dir is a run's scratch folder.
type Dir struct {
	Path string
	lock *os.File
}

// New creates the scratch folder of a run of job under parent ("" =
// os.TempDir()) and locks it.
//
// The folder is made and locked under a hidden name that Sweep does not
// look at, then renamed into place: a concurrent Sweep (another run of the
// job on this host) never sees a live run's folder before its lock is
// held. (A process that dies between the two leaves an empty hidden
// folder behind.)
func New(parent, job, runID string) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	path := filepath.Join(parent, prefix(job)+runID)
	tmp, err := os.MkdirTemp(parent, "."+prefix(job)+runID+"-")
	if err != nil {
		return nil, fmt.Errorf("scratch folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("scratch folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("scratch folder %s: lock: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("scratch folder: %w", err)
	}
	return &Dir{Path: path, lock: f}, nil
}

// Sub creates a fresh folder inside d (one per period).
func (d *Dir) Sub(name string) (string, error) {
	p, err := os.MkdirTemp(d.Path, name+"-")
	if err != nil {
		return "", fmt.Errorf("scratch folder: %w", err)
	}
	return p, nil
}

// Close removes the folder and releases its lock. It is safe to call more
// than once.
func (d *Dir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	err := os.RemoveAll(d.Path)
	d.lock.Close()
	d.lock = nil
	return err
}

func prefix(job string) string { return "reportjob-" + job + "-" }

// Sweep removes the scratch folders of job's runs under parent whose run is
// gone (their lock is free) and returns how many it removed.
func Sweep(parent, job string, log *slog.Logger) (int, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("sweep scratch folders: %w", err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix(job)) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if !dead(path) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			log.Warn("remove scratch folder of a dead run", "path", path, "err", err)
			continue
		}
		log.Info("removed scratch folder of a dead run", "path", path)
		n++
	}
	return n, nil
}

// dead reports whether the folder's lock can be taken (its run is gone),
// or it has no lock file at all (a run that died while creating it).
func dead(path string) bool {
	f, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	return true // the lock is released with f.Close
}

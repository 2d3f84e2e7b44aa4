package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// bareLoop is the cost of creating a period's files on this disk and
// nothing else (issue 35 target 3): the objects the run published under
// reports, the same number of the same sizes in the same folders, written
// to a copy by one goroutine (a folder made once, each file created,
// written whole from memory and closed), then made durable by one
// syncfs, as the job's folder sink does. No encoding, hashing, temporary
// file, rename or manifest.
type bareLoop struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// WallMS is the loop's wall time, SyncMS the syncfs's part of it;
	// UserMS and SysMS its CPU (getrusage of this process).
	WallMS float64 `json:"wall_ms"`
	SyncMS float64 `json:"sync_ms"`
	UserMS float64 `json:"user_ms"`
	SysMS  float64 `json:"sys_ms"`
}

// runBareLoop writes the files under src again under dst (new).
func runBareLoop(src, dst string) (bareLoop, error) {
	var res bareLoop
	type file struct {
		rel  string
		size int64
	}
	var files []file
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		files = append(files, file{rel, fi.Size()})
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("bare loop: %w", err)
	}
	var maxSize int64
	for _, f := range files {
		maxSize = max(maxSize, f.size)
	}
	body := make([]byte, maxSize)
	for i := range body {
		body[i] = byte(i * 7)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return res, err
	}
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	made := map[string]bool{}
	for _, f := range files {
		path := filepath.Join(dst, f.rel)
		if dir := filepath.Dir(path); !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return res, err
			}
			made[dir] = true
		}
		if err := os.WriteFile(path, body[:f.size], 0o644); err != nil {
			return res, err
		}
		res.Files++
		res.Bytes += f.size
	}
	synced := time.Now()
	d, err := os.Open(dst)
	if err != nil {
		return res, err
	}
	err = unix.Syncfs(int(d.Fd()))
	d.Close()
	if err != nil {
		return res, fmt.Errorf("bare loop: syncfs: %w", err)
	}
	res.WallMS, res.SyncMS = msSince(start), msSince(synced)
	var after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	res.UserMS = float64(time.Duration(after.Utime.Nano()-before.Utime.Nano()).Microseconds()) / 1000
	res.SysMS = float64(time.Duration(after.Stime.Nano()-before.Stime.Nano()).Microseconds()) / 1000
	return res, nil
}

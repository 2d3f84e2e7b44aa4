//go:build !linux

package filesink

import (
	"errors"
	"os"
)

// syncFS is Linux's syncfs(2); elsewhere Sync fsyncs each path.
func syncFS(f *os.File) error { return syncfsUsable(f) }

// syncfsUsable: syncfs(2) is Linux's.
func syncfsUsable(*os.File) error { return errors.ErrUnsupported }

// startWriteback is a no-op: sync_file_range(2) is Linux's.
func startWriteback(*os.File) {}

// flushFS is a no-op: syncfs(2) is Linux's (syncfsUsable refuses it).
func flushFS(string) {}

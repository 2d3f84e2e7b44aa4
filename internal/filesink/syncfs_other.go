//go:build !linux

package filesink

import (
	"errors"
	"os"
)

// syncFS is Linux's syncfs(2); elsewhere Sync fsyncs each path.
func syncFS(*os.File) error { return errors.ErrUnsupported }

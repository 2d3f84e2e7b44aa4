//go:build !linux

package filesink

import (
	"os"
	"time"
)

// Elsewhere than Linux there is no fast path: every step is os.Root's.

func openBeneath(int, string) (int, error)              { return -1, errSlow }
func openChild(int, string) (int, error)                { return -1, errSlow }
func mkdirChild(int, string) error                      { return errSlow }
func createChild(int, string, string) (*os.File, error) { return nil, errSlow }
func openRWChild(int, string, string) (*os.File, error) { return nil, errSlow }
func createUnnamed(int, string) (*os.File, error)       { return nil, errSlow }
func linkUnnamed(*os.File, int, string) error           { return errSlow }
func renameChild(int, string, int, string) error        { return errSlow }
func setMtime(*os.File, time.Time) error                { return errSlow }
func dupFile(int, string) (*os.File, error)             { return nil, errSlow }
func closeFD(int)                                       {}

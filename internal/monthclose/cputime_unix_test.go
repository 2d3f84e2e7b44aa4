//go:build unix

package monthclose_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system, every thread) the process has
// used so far.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

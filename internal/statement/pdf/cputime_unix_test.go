//go:build unix

package pdf

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system, every thread: the garbage
// collector's too) the process has used so far; benchmarks report it per
// op, a figure the other agents sharing the machine disturb less than
// wall time.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

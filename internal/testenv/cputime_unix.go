//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system, every thread) the
// process has used so far. Benchmarks report it beside wall time: on a
// machine shared with other work, other processes disturb it less.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

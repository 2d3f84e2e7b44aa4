package crashpoint

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// StopEnvVar names the stop point: the process sends itself SIGSTOP (every
// thread stops, as when a VM is suspended) the Nth time that point is
// reached, and goes on where it stopped when the test sends SIGCONT.
//
//	RJTEST_STOP_AT=fenced-write:3   the third fenced write request, stopped
//	                                when its first bytes are about to be
//	                                written to the connection
const StopEnvVar = "RJTEST_STOP_AT"

// The stop points.
const (
	FencedWrite Point = "fenced-write" // a fenced write request's first bytes are about to be written
)

var (
	stopOnce   sync.Once
	stopTarget Point
	stopNth    int64
	stopHits   atomic.Int64
)

func loadStop() { stopTarget, stopNth = parse(os.Getenv(StopEnvVar)) }

// Stop stops the process (SIGSTOP) if p is the configured stop point and
// this is its Nth hit; what (the request, say) goes into the message on
// standard error. It returns when the process is continued. It is safe
// for concurrent use and costs a comparison when unset.
func Stop(p Point, what string) {
	stopOnce.Do(loadStop)
	if stopTarget == "" || p != stopTarget {
		return
	}
	if stopHits.Add(1) != stopNth {
		return
	}
	fmt.Fprintf(os.Stderr, "stop point %s:%d reached (%s): stopping the process\n", p, stopNth, what)
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}

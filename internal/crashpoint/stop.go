package crashpoint

import (
	"fmt"
	"os"
	"strings"
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
//	RJTEST_STOP_AT=fenced-write@BatchWriteItem:1
//	                                the first fenced write whose description
//	                                contains "BatchWriteItem"
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
	stopFilter string
	stopSpec   string // as configured, for the message
)

func loadStop() {
	stopSpec = os.Getenv(StopEnvVar)
	stopTarget, stopNth = parse(os.Getenv(StopEnvVar))
	if name, filter, ok := strings.Cut(string(stopTarget), "@"); ok {
		stopTarget, stopFilter = Point(name), filter
	}
}

// Stop stops the process (SIGSTOP) if p is the configured stop point and
// this is its Nth hit; what (the request, say) goes into the message on
// standard error. It returns when the process is continued. It is safe
// for concurrent use and costs a comparison when unset.
func Stop(p Point, what string) {
	stopOnce.Do(loadStop)
	if stopTarget == "" || p != stopTarget || !strings.Contains(what, stopFilter) {
		return
	}
	if stopHits.Add(1) != stopNth {
		return
	}
	fmt.Fprintf(os.Stderr, "stop point %s reached (%s): stopping the process\n", stopSpec, what)
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}

// Package crashpoint lets a test kill the process at an exact step of a
// run, to prove that one rerun recovers from a crash there. It is compiled
// into the binary and does nothing unless the environment variable
// RJTEST_CRASH_AT names a point: then the process sends itself SIGKILL
// (no deferred function runs, no file is closed, nothing is flushed) the
// Nth time that point is reached.
//
//	RJTEST_CRASH_AT=after-manifest      the first time
//	RJTEST_CRASH_AT=after-upload:3      the third time
//
// The points, in the order a period reaches them, are the Point constants.
// RJTEST_SLOW_AT pauses at a point instead (slow.go).
package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// EnvVar names the crash point to hit.
const EnvVar = "RJTEST_CRASH_AT"

// Point names a step boundary of a run.
type Point string

// The crash points.
const (
	AfterRead       Point = "after-read"       // a period's items are read and sorted
	AfterClaims     Point = "after-claims"     // the dedupe index entries are written
	AfterUpload     Point = "after-upload"     // one object is uploaded
	MidRestatement  Point = "mid-restatement"  // one object of a revision > 1 is uploaded
	AfterManifest   Point = "after-manifest"   // the manifest is written, before cleanup
	AfterCleanup    Point = "after-cleanup"    // unlisted objects and intents are deleted
	AfterCheckpoint Point = "after-checkpoint" // the checkpoint moved (or a recheck was recorded)

	// The monthly close (package monthclose), after the periods.
	MonthAfterUpload   Point = "month-after-upload"   // one statement object is uploaded
	MonthAfterManifest Point = "month-after-manifest" // a month manifest is written, before its cleanup
	MonthAfterCleanup  Point = "month-after-cleanup"  // a month's unlisted objects and intents are deleted
	BeforeDueDelete    Point = "before-due-delete"    // every month is published; the due markers are not deleted yet
)

// DeliveryAfterSend is reached when an e-mail or event was accepted by its
// server and its outbox record is not written yet (package delivery): the
// one window that can send a delivery twice. Not in Points: only a run
// with delivery configured reaches it.
const DeliveryAfterSend Point = "delivery-after-send"

// DeliveryBeforeSend is reached before each e-mail or event is sent.
const DeliveryBeforeSend Point = "delivery-before-send"

// AfterVerify is reached after verify checked (and repaired) one period.
// Not in Points: a run never reaches it.
const AfterVerify Point = "after-verify"

// Points lists every crash point.
var Points = []Point{AfterRead, AfterClaims, AfterUpload, MidRestatement, AfterManifest, AfterCleanup, AfterCheckpoint,
	MonthAfterUpload, MonthAfterManifest, MonthAfterCleanup, BeforeDueDelete}

var (
	once   sync.Once
	target Point
	nth    int64
	hits   atomic.Int64
)

func load() {
	target, nth = parse(os.Getenv(EnvVar))
	loadSlow()
}

// parse reads "POINT" or "POINT:N" (N >= 1, default 1); "" is no point.
func parse(v string) (Point, int64) {
	if v == "" {
		return "", 0
	}
	name, n, _ := strings.Cut(v, ":")
	k := int64(1)
	if n != "" {
		if x, err := strconv.ParseInt(n, 10, 64); err == nil && x > 0 {
			k = x
		}
	}
	return Point(name), k
}

// Hit kills the process if p is the configured point and this is its Nth
// hit. It is safe for concurrent use and costs a comparison when unset.
func Hit(p Point) {
	once.Do(load)
	slow(p)
	if target == "" || p != target {
		return
	}
	if hits.Add(1) != nth {
		return
	}
	fmt.Fprintf(os.Stderr, "crashpoint %s:%d reached: killing the process\n", p, nth)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not deliverable late; never return
}

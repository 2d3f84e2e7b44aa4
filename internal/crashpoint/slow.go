package crashpoint

import (
	"os"
	"strings"
	"time"
)

// SlowEnvVar names a point and a pause: every time the point is reached,
// the process sleeps that long, so that a test can act on a run in
// progress (send it SIGINT, read the store meanwhile) at a known step.
//
//	RJTEST_SLOW_AT=after-checkpoint=300ms
const SlowEnvVar = "RJTEST_SLOW_AT"

var (
	slowTarget Point
	slowFor    time.Duration
)

// loadSlow reads SlowEnvVar ("POINT=DURATION"; anything else is no pause).
func loadSlow() {
	name, d, ok := strings.Cut(os.Getenv(SlowEnvVar), "=")
	if !ok {
		return
	}
	if dur, err := time.ParseDuration(d); err == nil && dur > 0 {
		slowTarget, slowFor = Point(name), dur
	}
}

// slow pauses at p when it is the slow point.
func slow(p Point) {
	if slowTarget != "" && p == slowTarget {
		time.Sleep(slowFor)
	}
}

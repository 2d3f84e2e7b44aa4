//go:build !unix

package monthclose_test

import "time"

// cpuTime is not measured here: benchmarks report 0 cpu-s/op.
func cpuTime() time.Duration { return 0 }

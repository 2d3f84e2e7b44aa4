//go:build !unix

package pdf

import "time"

// cpuTime is not measured here: benchmarks report 0 cpu-ms/op.
func cpuTime() time.Duration { return 0 }

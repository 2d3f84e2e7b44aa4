//go:build !unix

package collect_test

import "time"

// processCPU is unknown here.
func processCPU() time.Duration { return 0 }

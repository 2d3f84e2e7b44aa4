//go:build !unix

package extsort

import "time"

// processCPU is unknown here.
func processCPU() time.Duration { return 0 }

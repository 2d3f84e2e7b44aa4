//go:build !unix

package main

import "time"

// processCPU is unknown here.
func processCPU() time.Duration { return 0 }

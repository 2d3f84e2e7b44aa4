package dedupeindex

import (
	"fmt"
	"os"
	"strconv"
)

// RJBENCH_IX_FANIN: the benchmarks (and tests) with another mergeFanIn.
// Apart from bench_test.go, which also builds against the layouts before
// merged runs, for the before/after comparison.
func init() {
	if v := os.Getenv("RJBENCH_IX_FANIN"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			panic(fmt.Sprintf("RJBENCH_IX_FANIN=%q: want an integer >= 2", v))
		}
		mergeFanIn = n
	}
}

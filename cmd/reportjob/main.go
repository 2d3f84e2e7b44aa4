// Command reportjob turns billing transactions stored in DynamoDB (or an
// embedded bbolt file) into per-agency commission reports in S3 (or a local
// folder). See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// sets another (docs/reference.md, "Memory"). Without one the garbage
// collector lets the heap grow to twice what is live: a period of 100,000
// agencies (400,000 objects listed in its manifest) was seen at 200 MiB
// live and 400 MB of RssAnon. Under the limit it collects sooner as the
// heap nears it; it is soft, so a run whose live data exceeds it goes on
// (the collector's share of the CPU is capped). 230 MiB and not less: the
// unchanged backfill of that period holds about 185 MiB live, and at a
// limit of 200 MiB its collector ran without pause.
const memoryLimit = 230 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	// The first SIGINT or SIGTERM cancels ctx with a *signalError cause:
	// run and ingest --generate stop at their next safe point, schedule
	// takes no new run (interrupt.go). A second one abandons the work in
	// progress.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	again := make(chan struct{})
	go func() {
		cancel(&signalError{sig: (<-sigs).(syscall.Signal)})
		<-sigs
		close(again)
	}()
	code := run(withSecondSignal(ctx, again), os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	signal.Stop(sigs)
	atExit()
	os.Exit(code)
}

// atExit runs before the process exits (profile.go's profiles).
var atExit = func() {}

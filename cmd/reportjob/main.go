// Command reportjob turns billing transactions stored in DynamoDB (or an
// embedded bbolt file) into per-agency commission reports in S3 (or a local
// folder). See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
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

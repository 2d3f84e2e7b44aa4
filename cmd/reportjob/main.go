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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	atExit()
	os.Exit(code)
}

// atExit runs before the process exits (profile.go's profiles).
var atExit = func() {}

package testenv

import (
	"io"
	"os"
	"testing"
)

// CopyFile copies the file from to the file to (created or truncated),
// failing tb on any error: benchmarks copy a generated store before each
// run.
func CopyFile(tb testing.TB, from, to string) {
	tb.Helper()
	in, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

package drivertest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// testPutFile: PutFile stores a local file's bytes, whichever way the
// driver does it (a copy, or a hard link: driver.FilePutter), and the
// file keeps its bytes through the object's replacement and deletion.
// A FilePutter refuses, storing nothing, a conditional put and a size
// that is not the file's.
func testPutFile(t *testing.T, b *sink.Bucket, d driver.Bucket, h Hooks) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "report.parquet")
	data := Bytes(300_000, 7)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := b.PutFile(ctx, "a/file.bin", src, sink.PutOptions{ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	requireAttrs(t, "PutFile", a, "a/file.bin", int64(len(data)))
	RequireContent(t, b, "a/file.bin", data)
	requireFile(t, src, data)

	MustPut(t, b, "a/file.bin", []byte("replaced"))
	requireFile(t, src, data)
	if _, err := b.PutFile(ctx, "a/second.bin", src, sink.PutOptions{}); err != nil {
		t.Fatalf("PutFile of the same file again: %v", err)
	}
	RequireContent(t, b, "a/second.bin", data)
	if err := b.Delete(ctx, "a/second.bin"); err != nil {
		t.Fatal(err)
	}
	requireFile(t, src, data)
	RequireContent(t, b, "a/file.bin", []byte("replaced"))

	if fp, ok := d.(driver.FilePutter); ok {
		for _, tt := range []struct {
			name string
			size int64
			opts driver.PutOptions
		}{
			{"IfNoneMatch", int64(len(data)), driver.PutOptions{IfNoneMatch: true}},
			{"IfMatch", int64(len(data)), driver.PutOptions{IfMatch: a.ETag}},
			{"wrong size", int64(len(data)) - 1, driver.PutOptions{}},
		} {
			if _, err := fp.PutFile(ctx, "a/refused.bin", src, tt.size, tt.opts); !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("PutFile %s: %v, want errors.ErrUnsupported", tt.name, err)
			}
			RequireMissing(t, b, "a/refused.bin")
		}
		if _, err := fp.PutFile(ctx, "a/missing.bin", src+".gone", 1, driver.PutOptions{}); err == nil || errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("PutFile of a missing file: %v, want an error other than ErrUnsupported", err)
		}
		RequireMissing(t, b, "a/missing.bin")
	}
	h.NoLeftovers(t, d)
}

// requireFile fails t unless the file at path holds want.
func requireFile(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the source file: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the source file holds %d bytes, want its %d bytes unchanged", len(got), len(want))
	}
}

package drivertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// testDeferredPut: a Put with PutOptions.Defer is visible, whole, when it
// returns, as any Put (it is only its durability that waits for Sync);
// PutFile and an overwrite with Defer too; Sync succeeds, and again with
// nothing pending; Defer does not weaken a condition; a DeleteDeferred
// removes the object at once, as Delete does.
func testDeferredPut(t *testing.T, b *sink.Bucket, d driver.Bucket, h Hooks) {
	ctx := context.Background()
	deferred := sink.PutOptions{ContentType: "text/csv", Defer: true}
	want := map[string][]byte{}
	for i := range 5 {
		key := fmt.Sprintf("agency=a%d/period=p/summary.csv", i)
		want[key] = fmt.Appendf(nil, "rows of a%d\n", i)
		if _, err := b.PutBytes(ctx, key, want[key], deferred); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(t.TempDir(), "lines.csv")
	if err := os.WriteFile(src, []byte("line items\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutFile(ctx, "agency=a0/period=p/lines.csv", src, deferred); err != nil {
		t.Fatal(err)
	}
	want["agency=a0/period=p/lines.csv"] = []byte("line items\n")
	if _, err := b.PutBytes(ctx, "agency=a1/period=p/summary.csv", []byte("replaced\n"), deferred); err != nil {
		t.Fatal(err)
	}
	want["agency=a1/period=p/summary.csv"] = []byte("replaced\n")
	for key, data := range want {
		RequireContent(t, b, key, data)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatalf("Sync with nothing pending: %v", err)
	}
	for key, data := range want {
		RequireContent(t, b, key, data)
	}
	cond := deferred
	cond.IfNoneMatch = true
	if _, err := b.PutBytes(ctx, "agency=a0/period=p/summary.csv", []byte("x"), cond); !errors.Is(err, sink.ErrPrecondition) {
		t.Fatalf("IfNoneMatch with Defer over an object = %v, want ErrPrecondition", err)
	}
	if _, err := b.PutBytes(ctx, "manifest.json", []byte("{}"), cond); err != nil {
		t.Fatal(err)
	}
	RequireContent(t, b, "manifest.json", []byte("{}"))
	// A deferred Delete: gone when it returns, as a Delete; a missing
	// object is not an error; Sync then succeeds.
	for _, key := range []string{"agency=a0/period=p/lines.csv", "agency=a4/period=p/summary.csv", "agency=a9/never.csv"} {
		if err := b.DeleteDeferred(ctx, key); err != nil {
			t.Fatalf("DeleteDeferred(%q): %v", key, err)
		}
		RequireMissing(t, b, key)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatalf("Sync after deferred deletes: %v", err)
	}
	RequireContent(t, b, "agency=a0/period=p/summary.csv", want["agency=a0/period=p/summary.csv"])
	h.NoLeftovers(t, d)
}

package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSnapshot: while a Store has the file open, OpenSnapshot reads its
// last commit, read-only; once it is closed, there is no snapshot (and no
// socket left).
func TestSnapshot(t *testing.T) {
	dir, err := os.MkdirTemp("", "rjsnap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s.db")
	ctx := context.Background()
	w, err := Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	l, err := w.Acquire(ctx, "j", "owner-1", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenSnapshot(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Load(ctx, "j")
	if err != nil || st.Lease.Owner != "owner-1" || st.Lease.Token != l.Token {
		t.Errorf("snapshot: lease %+v, %v; want %+v", st.Lease, err, l)
	}
	if !r.Snapshot() {
		t.Error("Snapshot() false")
	}
	if err := r.Init(ctx); err == nil {
		t.Error("a write to a snapshot succeeded")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(SocketPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v", err)
	}
	if _, err := OpenSnapshot(ctx, path); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("OpenSnapshot with no writer: %v, want ErrNoSnapshot", err)
	}
}

//go:build unix

package filesink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

// eachPath runs f with the fast path (fast.go) and with os.Root's alone.
func eachPath(t *testing.T, f func(t *testing.T)) {
	t.Run("fast", f)
	t.Run("root", func(t *testing.T) {
		was := noOpenat2.Load()
		noOpenat2.Store(true)
		t.Cleanup(func() { noOpenat2.Store(was) })
		f(t)
	})
}

// TestPutThroughLinks: whichever path a Put takes, a symbolic link on the
// way of a key never lets it write outside the folder (absolute, or
// relative and leaving it), a link to a folder inside is followed as
// os.Root follows it, and a link at the key itself is replaced, its
// target left alone.
func TestPutThroughLinks(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		s := newSink(t)
		outside := t.TempDir()
		target := filepath.Join(outside, "victim")
		if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(s.Dir(), outside)
		if err != nil {
			t.Fatal(err)
		}
		links := map[string]string{"abs": outside, "rel": rel, "in": "real", "p/victim": target}
		if err := os.MkdirAll(filepath.Join(s.Dir(), "real"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(s.Dir(), "p"), 0o750); err != nil {
			t.Fatal(err)
		}
		for link, to := range links {
			if err := os.Symlink(to, filepath.Join(s.Dir(), filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		for _, deferred := range []bool{false, true} {
			opts := driver.PutOptions{Defer: deferred}
			for _, key := range []string{"abs/victim", "abs/new/x", "rel/victim", "rel/new/x"} {
				if _, err := s.Put(ctx, key, bytesReader("evil"), 4, opts); err == nil {
					t.Errorf("Put(%q) through a link out of the folder succeeded", key)
				}
			}
			if _, err := s.Put(ctx, "in/x", bytesReader("inside"), 6, opts); err != nil {
				t.Errorf("Put through a link to a folder inside: %v", err)
			} else if got, err := os.ReadFile(filepath.Join(s.Dir(), "real", "x")); err != nil || string(got) != "inside" {
				t.Errorf("real/x = %q, %v; want the object put at in/x", got, err)
			}
			if _, err := s.Put(ctx, "p/victim", bytesReader("new"), 3, opts); err != nil {
				t.Errorf("Put over a link: %v", err)
			}
		}
		if got, err := os.ReadFile(target); err != nil || string(got) != "keep" {
			t.Errorf("the file outside is %q, %v; want it untouched", got, err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Errorf("the folder outside holds %d entries, want only its own file", len(entries))
		}
		if fi, err := os.Lstat(filepath.Join(s.Dir(), "p", "victim")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("p/victim: %v, %v; want the object, a regular file (the link replaced)", fi, err)
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPutOnFolders: a key naming a folder, or below a file, fails on
// either path, leaving what is there.
func TestPutOnFolders(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		s := newSink(t)
		ctx := context.Background()
		if _, err := s.Put(ctx, "a/b/c", bytesReader("c"), 1, driver.PutOptions{Defer: true}); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"a/b", "a/b/c/d", "a/b/c/d/e"} {
			if _, err := s.Put(ctx, key, bytesReader("x"), 1, driver.PutOptions{Defer: true}); err == nil {
				t.Errorf("Put(%q) succeeded, want an error", key)
			}
		}
		drivertest.RequireContent(t, sink.New(s), "a/b/c", []byte("c"))
		if got := hidden(t, s.Dir()); len(got) != 0 {
			t.Fatalf("temporary files left: %q", got)
		}
	})
}

// TestPutModeUnderUmask: an object is 0640 even under a stricter umask
// (as before the fast path: its mode is set when the file does not have it).
func TestPutModeUnderUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	eachPath(t, func(t *testing.T) {
		s := newSink(t)
		if _, err := s.Put(context.Background(), "m/x", bytesReader("x"), 1, driver.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(s.Dir(), "m", "x"))
		if err != nil || fi.Mode() != fileMode {
			t.Fatalf("object: %v, %v; want mode %v", fi, err, os.FileMode(fileMode))
		}
	})
}

// TestFastPathTaken: on Linux with openat2(2), a Put into a new folder and
// one into an existing folder take the fast path.
func TestFastPathTaken(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fast path is Linux's")
	}
	s := newSink(t)
	for _, key := range []string{"agencies/agency=a/period=p/x.csv", "agencies/agency=a/period=p/y.csv", "top.csv"} {
		_, tf, err := s.createTemp()
		if err != nil {
			t.Fatal(err)
		}
		err = s.placeFast(tf, key, true)
		tf.f.Close()
		if errors.Is(err, errSlow) && noOpenat2.Load() {
			t.Skip("no openat2 here")
		}
		if err != nil {
			t.Fatalf("placeFast(%q) = %v, want nil", key, err)
		}
		if _, err := os.Stat(filepath.Join(s.Dir(), filepath.FromSlash(key))); err != nil {
			t.Fatal(err)
		}
	}
}

// bytesReader is a Put body.
func bytesReader(s string) *strings.Reader { return strings.NewReader(s) }

package filesink

import (
	"context"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reportjob/reportjob/internal/sink"
)

func TestReleaseAtLeast(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"6.18.44-fc-v595", true},
		{"5.8.0-1-amd64", true},
		{"5.10-rc1", true},
		{"5.7.19", false},
		{"5.4.0-150-generic", false},        // Ubuntu 20.04
		{"4.18.0-553.el8_10.x86_64", false}, // RHEL 8
		{"4.14.355-275.570.amzn2.x86_64", false},
		{"", false},
		{"garbage", false},
	} {
		if got := releaseAtLeast(tc.rel, [2]int{5, 8}); got != tc.want {
			t.Errorf("releaseAtLeast(%q, 5.8) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// TestSyncWhereSyncfsIsNotTrusted: where syncfs(2) does not report the
// write-back errors of the deferred files (Linux before 5.8) or may not
// make them durable (a FUSE or SMB mount), Sync fsyncs each file and
// folder, as it does where syncfs is missing: a syncfs that returns 0
// after a failed write-back would let the manifest be written over a
// lost object.
func TestSyncWhereSyncfsIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	realRelease, realMagic := kernelRelease, fsMagic
	t.Cleanup(func() { kernelRelease, fsMagic = realRelease, realMagic })
	for _, tc := range []struct {
		name    string
		release string
		magic   uint32
	}{
		{"Linux 5.4, ext4", "5.4.0-150-generic", unix.EXT4_SUPER_MAGIC},
		{"Linux 4.18, xfs", "4.18.0-553.el8_10.x86_64", unix.XFS_SUPER_MAGIC},
		{"FUSE", "6.8.0-45-generic", unix.FUSE_SUPER_MAGIC},
		{"SMB", "6.8.0-45-generic", unix.SMB2_SUPER_MAGIC},
		{"overlayfs", "6.8.0-45-generic", unix.OVERLAYFS_SUPER_MAGIC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kernelRelease = func() string { return tc.release }
			fsMagic = func(*os.File) (uint32, error) { return tc.magic, nil }
			s := newSink(t)
			b := sink.New(s)
			l := recordSyncs(t, s)
			for _, k := range []string{"a/b/one.csv", "top.csv"} {
				if _, err := b.PutBytes(ctx, k, []byte(k), sink.PutOptions{Defer: true}); err != nil {
					t.Fatal(err)
				}
			}
			l.take()
			if err := b.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ := l.take()
			if want := []string{".", "a", "a/b", "a/b/one.csv", "top.csv"}; !slices.Equal(got, want) {
				t.Errorf("Sync fsynced %q, want every file and folder %q", got, want)
			}
		})
	}
	// Where it is trusted: one syncfs, no fsync.
	kernelRelease = func() string { return "6.8.0-45-generic" }
	fsMagic = func(*os.File) (uint32, error) { return unix.EXT4_SUPER_MAGIC, nil }
	s := newSink(t)
	l := recordSyncs(t, s)
	if _, err := sink.New(s).PutBytes(ctx, "a/b/one.csv", []byte("x"), sink.PutOptions{Defer: true}); err != nil {
		t.Fatal(err)
	}
	l.take()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.take(); len(got) != 0 {
		t.Errorf("Sync on ext4, Linux 6.8, fsynced %q, want one syncfs", got)
	}
}

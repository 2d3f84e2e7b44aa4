package main

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeRoot makes the /proc and /sys entries ext4NoJournal reads.
func fakeRoot(t *testing.T, mountinfo string, devices map[string]string, ext4, jbd2 []string) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("proc/self")
	if err := os.WriteFile(filepath.Join(root, "proc/self/mountinfo"), []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	mk("sys/dev/block")
	for devno, name := range devices {
		if err := os.Symlink("../../devices/virtual/block/"+name, filepath.Join(root, "sys/dev/block", devno)); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range ext4 {
		mk("proc/fs/ext4/" + n)
	}
	mk("proc/fs/jbd2")
	for _, n := range jbd2 {
		mk("proc/fs/jbd2/" + n)
	}
	return root
}

func TestExt4NoJournal(t *testing.T) {
	const mounts = `23 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
24 23 0:22 / /proc rw - proc proc rw
25 23 0:30 / /tmp rw - tmpfs tmpfs rw
26 23 253:1 / /srv/with\040space rw - ext4 /dev/mapper/vg-data rw
27 23 8:1 / /data rw - xfs /dev/sdb1 rw
`
	devices := map[string]string{"254:0": "vda", "253:1": "dm-1", "8:1": "sdb1"}
	for _, tc := range []struct {
		name       string
		dir        string
		ext4, jbd2 []string
		want       string
	}{
		{"root without a journal", "/var/work", []string{"vda", "dm-1"}, nil, "vda"},
		{"root with a journal", "/var/work", []string{"vda"}, []string{"vda-8"}, ""},
		{"another device's journal", "/var/work", []string{"vda", "dm-1"}, []string{"dm-1-8"}, "vda"},
		{"tmpfs below it", "/tmp/reportbench-1", []string{"vda"}, nil, ""},
		{"device mapper, escaped mount point", "/srv/with space/b", []string{"vda", "dm-1"}, nil, "dm-1"},
		{"xfs", "/data/b", []string{"vda"}, nil, ""},
		{"ext4 not listed by the kernel", "/var/work", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeRoot(t, mounts, devices, tc.ext4, tc.jbd2)
			if got := ext4NoJournal(root, tc.dir); got != tc.want {
				t.Errorf("ext4NoJournal(%q) = %q, want %q", tc.dir, got, tc.want)
			}
		})
	}
}

func TestRemoveMovesAsideWithoutAJournal(t *testing.T) {
	work := t.TempDir()
	b := &bench{work: work, noJournal: "vda"}
	dir, err := b.workdir("run-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.remove(dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", dir, err)
	}
	moved := filepath.Join(work, trashName, filepath.Base(dir), "f")
	if _, err := os.Stat(moved); err != nil {
		t.Fatalf("not moved aside: %v", err)
	}
	b.deleteTrash()
	if _, err := os.Stat(filepath.Join(work, trashName)); !os.IsNotExist(err) {
		t.Fatalf("trash left: %v", err)
	}

	b.noJournal = ""
	dir, _ = b.workdir("run-2")
	b.remove(dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(work, trashName)); !os.IsNotExist(err) {
		t.Fatalf("moved aside with a journal: %v", err)
	}
}

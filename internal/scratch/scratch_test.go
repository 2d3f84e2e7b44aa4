package scratch

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSweep: a live run's folder stays; a folder whose run died (lock
// free, here: a child process that exited holding it) is removed; other
// jobs' folders are left alone.
func TestSweep(t *testing.T) {
	if os.Getenv("SCRATCH_CHILD") != "" {
		d, err := New(os.Getenv("SCRATCH_PARENT"), "job", "dead")
		if err != nil {
			panic(err)
		}
		os.WriteFile(filepath.Join(d.Path, "spill"), []byte("x"), 0o600)
		os.Exit(0) // dies without Close: the kernel drops the lock
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweep$")
	cmd.Env = append(os.Environ(), "SCRATCH_CHILD=1", "SCRATCH_PARENT="+parent)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	live, err := New(parent, "job", "live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	other, err := New(parent, "other", "dead2")
	if err != nil {
		t.Fatal(err)
	}
	other.lock.Close() // dead, but another job's
	other.lock = nil

	n, err := Sweep(parent, "job", slog.New(slog.DiscardHandler))
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 folder removed", n, err)
	}
	for name, want := range map[string]bool{"reportjob-job-dead": false, "reportjob-job-live": true, "reportjob-other-dead2": true} {
		_, err := os.Stat(filepath.Join(parent, name))
		if got := err == nil; got != want {
			t.Errorf("%s exists = %v, want %v", name, got, want)
		}
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live.Path); !os.IsNotExist(err) {
		t.Errorf("Close left %s", live.Path)
	}
}

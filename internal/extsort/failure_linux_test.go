//go:build linux

package extsort

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// openFDs lists the process's open file descriptors and what they are.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	// The runtime opens its poller's descriptors (epoll, eventfd) with the
	// first pollable file of the process: make sure that is not the
	// sorter's.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := make(map[string]string, len(ents))
	for _, e := range ents {
		fds[e.Name()], _ = os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
	}
	return fds
}

// checkClean closes s and checks that no run file remains in dir and
// that the process has as many descriptors open as before (fds).
func checkClean(t *testing.T, s *Sorter, dir string, fds map[string]string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	left, err := filepath.Glob(filepath.Join(dir, "extsort-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("files left after Close: %v", left)
	}
	if now := openFDs(t); !maps.Equal(now, fds) {
		t.Errorf("file descriptors open after Close: %v, before: %v", now, fds)
	}
}

// addUntilError adds n records of about 150 bytes and returns the first
// error of Add or, failing that, of Sort.
func addUntilError(s *Sorter, n int) error {
	for i := range n {
		if err := s.Add(fmt.Appendf(nil, "key-%08d", (i*7919)%n), make([]byte, 140)); err != nil {
			return err
		}
	}
	_, err := s.Sort()
	return err
}

func TestSpillDirUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type test struct {
		name string
		dir  string
		want error
	}
	tests := []test{
		{"missing", filepath.Join(t.TempDir(), "missing"), fs.ErrNotExist},
		{"a file", file, syscall.ENOTDIR},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, test{"read-only", ro, fs.ErrPermission})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fds := openFDs(t)
			s := New(Options{Dir: tt.dir, MemBytes: 16 << 10})
			err := addUntilError(s, 1000)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.dir) {
				t.Errorf("error %q does not name the folder %s", err, tt.dir)
			}
			// The error sticks: the sorter lost records.
			if err2 := s.Add([]byte("x"), nil); err2 == nil {
				t.Errorf("Add after a failed spill succeeded")
			}
			checkClean(t, s, filepath.Dir(tt.dir), fds)
		})
	}
}

func TestInMemoryTouchesNoDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing") // any file would fail
	s := New(Options{Dir: dir, MemBytes: 1 << 20})
	var want []rec
	for i := range 2000 {
		r := rec{fmt.Sprintf("%05d", (i*7919)%2000), "v"}
		want = append(want, r)
		if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, it)
	slices.SortFunc(want, compareRec)
	if !slices.Equal(got, want) {
		t.Error("output differs from the reference sort")
	}
	if st := s.Stats(); st.Runs != 0 || st.SpilledBytes != 0 {
		t.Errorf("Stats = %+v, want no runs", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSpillWriteFails makes writes fail half-way through a run file, with
// a file size limit (EFBIG: Go ignores SIGXFSZ). The limit binds the whole
// process, so the test runs in a child process of its own: in this one it
// would also break the test framework's own files.
func TestSpillWriteFails(t *testing.T) {
	const env = "EXTSORT_TEST_FSIZE_CHILD"
	if os.Getenv(env) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSpillWriteFails$", "-test.v")
		cmd.Env = append(os.Environ(), env+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSpillWriteFails") {
			t.Fatalf("child test: %v\n%s", err, out)
		}
		return
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 100 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		mem  int
		n    int
	}{
		// Buffers of 256 KiB: the first run fails at 100 KiB.
		{"spill", 512 << 10, 20000},
		// Buffers of 16 KiB and a fan-in of 8: runs fit, the merge pass's
		// output does not.
		{"merge pass", 32 << 10, 3000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fds := openFDs(t)
			s := New(Options{Dir: dir, MemBytes: tt.mem})
			err := addUntilError(s, tt.n)
			if !errors.Is(err, syscall.EFBIG) {
				t.Fatalf("error %v, want EFBIG", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, "extsort-")) {
				t.Errorf("error %q does not name the run file", err)
			}
			checkClean(t, s, dir, fds)
		})
	}
}

func TestCloseMidIteration(t *testing.T) {
	for _, mem := range []int{0, 64 << 10} {
		t.Run(fmt.Sprintf("mem=%d", mem), func(t *testing.T) {
			dir := t.TempDir()
			fds := openFDs(t)
			s := New(Options{Dir: dir, MemBytes: mem})
			for i := range 5000 {
				if err := s.Add(fmt.Appendf(nil, "%08d", (i*7919)%5000), make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			it, err := s.Sort()
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				if !it.Next() {
					t.Fatalf("iterator ended early: %v", it.Err())
				}
			}
			if mem > 0 && len(runFiles(t, dir)) == 0 {
				t.Fatal("no run files to remove")
			}
			checkClean(t, s, dir, fds)
			if it.Next() {
				t.Error("Next after Close returned true")
			}
			if !errors.Is(it.Err(), ErrClosed) {
				t.Errorf("Err after Close = %v, want ErrClosed", it.Err())
			}
		})
	}
}

func TestCloseBeforeSort(t *testing.T) {
	dir := t.TempDir()
	fds := openFDs(t)
	s := New(Options{Dir: dir, MemBytes: 64 << 10})
	for i := range 5000 {
		if err := s.Add(fmt.Appendf(nil, "%08d", i), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	checkClean(t, s, dir, fds) // a spill may be in flight
}

func TestAddTooLarge(t *testing.T) {
	// One untouched anonymous mapping serves as key and value.
	big, err := syscall.Mmap(-1, 0, MaxRecordBytes/2+1, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(big)
	s := New(Options{Dir: t.TempDir()})
	defer s.Close()
	err = s.Add(big, big)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add: %v, want ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(len(big))) {
		t.Errorf("error %q does not give the key length %d", err, len(big))
	}
	if st := s.Stats(); st.Records != 0 {
		t.Errorf("Stats.Records = %d after a rejected record", st.Records)
	}
}

func TestBatchAddTooLarge(t *testing.T) {
	big, err := syscall.Mmap(-1, 0, MaxRecordBytes/2+1, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(big)
	var b Batch
	if err := b.Add([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(big, big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add: %v, want ErrTooLarge", err)
	}
	if b.Len() != 1 || len(b.recs) != recHeader+2 {
		t.Errorf("batch changed by a refused record: %d records, %d bytes", b.Len(), len(b.recs))
	}
}

package filesink

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/report/sinktest"
)

func newSink(t *testing.T) *Sink {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "reports", "nested"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) report.Sink { return newSink(t) })
}

// TestFilesOnDisk checks the layout the sink leaves: the key's path, modes,
// and no temporary file after Commit or Abort.
func TestFilesOnDisk(t *testing.T) {
	s := newSink(t)
	sinktest.Put(t, s, "period=20240101T0000Z/agency=a%2Fb/summary.csv", []byte("x"))
	w, err := s.NewWriter(context.Background(), "period=20240101T0000Z/aborted", "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	// While writing, the temporary file is in the target's folder, hidden.
	entries, err := os.ReadDir(filepath.Join(s.Dir(), "period=20240101T0000Z"))
	if err != nil {
		t.Fatal(err)
	}
	var tmp int
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".aborted"+tmpMark) {
			tmp++
		}
	}
	if tmp != 1 {
		t.Fatalf("during the write, folder holds %v; want one temporary file", entries)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}

	var files []string
	err = filepath.WalkDir(s.Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.Dir(), p)
		want := os.FileMode(0o644)
		if d.IsDir() {
			want = os.ModeDir | 0o755
		} else {
			files = append(files, filepath.ToSlash(rel))
		}
		if p != s.Dir() && fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", rel, fi.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0] != "period=20240101T0000Z/agency=a%2Fb/summary.csv" {
		t.Fatalf("files on disk = %q, want only the committed one", files)
	}
}

// TestListSkipsForeignFiles: files whose path is not a valid key (left-over
// temporary files of a crashed run, editor backups) are not objects.
func TestListSkipsForeignFiles(t *testing.T) {
	s := newSink(t)
	sinktest.Put(t, s, "p/a.csv", []byte("abc"))
	for _, name := range []string{"p/.a.csv" + tmpMark + "123", "p/a.csv~", "p/with space"} {
		if err := os.WriteFile(filepath.Join(s.Dir(), filepath.FromSlash(name)), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(s.Dir(), "p", "link")); err != nil {
		t.Fatal(err)
	}
	infos, err := s.List(context.Background(), "p/")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != "p/a.csv" || infos[0].Size != 3 {
		t.Fatalf("List = %+v, want only p/a.csv", infos)
	}
}

// TestWriteFailsOnFolderConflict: a key below an existing object cannot be
// written, and the failure leaves nothing behind.
func TestWriteFailsOnFolderConflict(t *testing.T) {
	s := newSink(t)
	sinktest.Put(t, s, "a", []byte("file"))
	if _, err := s.NewWriter(context.Background(), "a/b", "text/plain"); err == nil {
		t.Fatal("NewWriter below a file succeeded, want an error")
	}
	if got := sinktest.Get(t, s, "a"); string(got) != "file" {
		t.Fatalf("Open(a) = %q", got)
	}
}

func TestNewEmptyDir(t *testing.T) {
	if _, err := New(""); err == nil {
		t.Fatal(`New("") succeeded, want an error`)
	}
}

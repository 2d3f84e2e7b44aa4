package filesink

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

func newSink(t *testing.T) *Sink {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "reports", "nested"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// hidden returns the paths below dir of the files whose name starts with
// '.' (temporary files; the lock file is left out).
func hidden(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConformance runs the drivers' suite on the sink, with its fast path
// (fast.go), with deferred Puts through the temporary folder instead of
// unnamed files (unnamed.go), and with os.Root's path alone (no openat2).
func TestConformance(t *testing.T) {
	for _, path := range []string{"fast", "temporary", "root"} {
		t.Run(path, func(t *testing.T) {
			if path == "root" {
				was := noOpenat2.Load()
				noOpenat2.Store(true)
				t.Cleanup(func() { noOpenat2.Store(was) })
			}
			open := func(t *testing.T) driver.Bucket {
				s := newSink(t)
				s.noUnnamed.Store(path == "temporary")
				return s
			}
			drivertest.RunHooks(t, open, drivertest.Hooks{
				NoLeftovers: func(t *testing.T, d driver.Bucket) {
					if tmp := hidden(t, d.(*Sink).Dir()); len(tmp) != 0 {
						t.Fatalf("temporary files left: %q", tmp)
					}
				},
			})
		})
	}
}

// TestFilesOnDisk checks the layout the sink leaves: the key's path,
// modes, no temporary file, and the lock file hidden.
func TestFilesOnDisk(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	ctx := context.Background()
	drivertest.MustPut(t, b, "period=20240101T0000Z/agency=a%2Fb/summary.csv", []byte("x"))
	if _, err := b.PutBytes(ctx, "manifests/m.json", []byte("{}"), sink.PutOptions{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	var files []string
	err := filepath.WalkDir(s.Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.Dir(), p)
		want := os.FileMode(fileMode)
		if d.IsDir() {
			want = os.ModeDir | dirMode
		} else if !strings.HasPrefix(filepath.ToSlash(rel), tmpArea+"/") { // the open Sink's lock
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
	want := []string{lockName, "manifests/m.json", "period=20240101T0000Z/agency=a%2Fb/summary.csv"}
	if !slices.Equal(files, want) {
		t.Fatalf("files on disk = %q, want %q", files, want)
	}
	as, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := drivertest.Keys(as); !slices.Equal(got, want[1:]) {
		t.Fatalf("List = %q, want %q (no lock file)", got, want[1:])
	}
}

// TestListSkipsForeignFiles: files whose path is not a valid key or that
// are hidden (temporary files of a crashed run, editor backups, desktop
// files, symbolic links) are not objects.
func TestListSkipsForeignFiles(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	drivertest.MustPut(t, b, "p/a.csv", []byte("abc"))
	for _, name := range []string{"p/" + tmpPrefix + "123", "p/a.csv~", "p/with space", "p/.DS_Store", ".hidden/x", "p/.git/y"} {
		p := filepath.Join(s.Dir(), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("junk"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(s.Dir(), "p", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.csv", filepath.Join(s.Dir(), "p", "inside")); err != nil {
		t.Fatal(err)
	}
	as, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Key != "p/a.csv" || as[0].Size != 3 {
		t.Fatalf("List = %+v, want only p/a.csv", as)
	}
	for _, k := range []string{"p/link", "p/inside"} {
		drivertest.RequireMissing(t, b, k)
	}
}

// TestReservedKeys: the driver's own files cannot be reached by a key.
func TestReservedKeys(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	ctx := context.Background()
	if _, err := b.PutBytes(ctx, "m", nil, sink.PutOptions{IfNoneMatch: true}); err != nil {
		t.Fatal(err) // creates the lock file
	}
	for _, k := range []string{lockName, "p/" + tmpPrefix + "x"} {
		if _, err := b.PutBytes(ctx, k, []byte("x"), sink.PutOptions{}); err == nil {
			t.Errorf("Put(%q) succeeded, want an error", k)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, sink.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want ErrNotFound", k, err)
		}
		if err := b.Delete(ctx, k); err != nil {
			t.Errorf("Delete(%q) = %v, want nil (nothing)", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), lockName)); err != nil {
		t.Fatalf("lock file: %v", err)
	}
}

// TestPutFailsOnFolderConflict: a key below an existing object cannot be
// written, and the failure leaves nothing behind.
func TestPutFailsOnFolderConflict(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	drivertest.MustPut(t, b, "a", []byte("file"))
	if _, err := b.PutBytes(context.Background(), "a/b", []byte("x"), sink.PutOptions{}); err == nil {
		t.Fatal("Put below a file succeeded, want an error")
	}
	drivertest.RequireContent(t, b, "a", []byte("file"))
}

// TestDeleteRemovesEmptyFolders: Delete leaves no empty folder below the
// sink's, and never removes the sink's own folder.
func TestDeleteRemovesEmptyFolders(t *testing.T) {
	s := newSink(t)
	b := sink.New(s)
	ctx := context.Background()
	drivertest.MustPut(t, b, "x/period=1/a/file", []byte("1"))
	drivertest.MustPut(t, b, "x/period=2/file", []byte("2"))
	if err := b.Delete(ctx, "x/period=1/a/file"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "period=2" {
		t.Fatalf("x/ holds %v, want only period=2", entries)
	}
	if err := b.Delete(ctx, "x/period=2/file"); err != nil {
		t.Fatal(err)
	}
	// A failed Put leaves no folder it made either.
	if _, err := b.Put(ctx, "y/new/file", failing{}, 1000, sink.PutOptions{}); err == nil {
		t.Fatal("Put of a failing body succeeded")
	}
	entries, err = os.ReadDir(s.Dir())
	if err != nil {
		t.Fatalf("the sink's folder: %v", err)
	}
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return e.Name() == tmpArea })
	if len(entries) != 0 {
		t.Fatalf("sink folder holds %v, want nothing (but the open Sink's %s)", entries, tmpArea)
	}
}

// TestETagChangesOnSameBytes: every Put makes a new ETag, even of the same
// bytes in quick succession, so an IfMatch with an older ETag fails.
func TestETagChangesOnSameBytes(t *testing.T) {
	b := sink.New(newSink(t))
	ctx := context.Background()
	seen := map[string]bool{}
	var prev sink.Attrs
	for i := range 50 {
		opts := sink.PutOptions{IfMatch: prev.ETag, IfNoneMatch: i == 0}
		a, err := b.PutBytes(ctx, "m", []byte("same"), opts)
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if seen[a.ETag] {
			t.Fatalf("put %d repeated ETag %q", i, a.ETag)
		}
		seen[a.ETag] = true
		prev = a
	}
	for e := range seen {
		if e == prev.ETag {
			continue
		}
		if _, err := b.PutBytes(ctx, "m", []byte("same"), sink.PutOptions{IfMatch: e}); !errors.Is(err, sink.ErrPrecondition) {
			t.Fatalf("IfMatch with the old ETag %q = %v, want ErrPrecondition", e, err)
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := New(""); err == nil {
		t.Fatal(`New("") succeeded, want an error`)
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode() != os.ModeDir|dirMode {
		t.Fatalf("New made %v, %v; want a folder %v", fi.Mode(), err, os.ModeDir|dirMode)
	}
	if got := s.String(); got != "file://"+dir {
		t.Errorf("String = %q", got)
	}
	if got := sink.New(s).URL("k/x"); got != "file://"+dir+"/k/x" {
		t.Errorf("URL = %q", got)
	}
	if s.MaxKeyLen() != 4095-len(dir)-1 || s.MaxSegmentLen() != 255 {
		t.Errorf("limits %d, %d", s.MaxKeyLen(), s.MaxSegmentLen())
	}
}

// TestProcessesRace: conditional puts from several processes on one
// folder: exactly one IfNoneMatch wins, whatever the process.
func TestProcessesRace(t *testing.T) {
	if os.Getenv("FILESINK_RACE_DIR") != "" {
		raceChild()
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(exe, "-test.run=^TestProcessesRace$")
		cmds[i].Env = append(os.Environ(), "FILESINK_RACE_DIR="+dir)
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := sink.New(s)
	as, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	wins := map[string]int{}
	for _, a := range as {
		if strings.HasPrefix(a.Key, "win/") {
			wins[strings.Split(a.Key, "/")[1]]++
		}
	}
	for i := range raceRounds {
		if n := wins[keyOf(i)]; n != 1 {
			t.Errorf("round %d: %d processes won, want 1 (%v)", i, n, wins)
		}
	}
	// Every successful IfMatch increment is in the counter: none was
	// lost to another process's overwrite.
	incs, err := b.List(context.Background(), "inc/")
	if err != nil {
		t.Fatal(err)
	}
	counter := drivertest.MustRead(t, b, "counter")
	if string(counter) != strconv.Itoa(len(incs)) {
		t.Fatalf("counter = %s after %d successful increments", counter, len(incs))
	}
	t.Logf("%d processes: %d increments of %d attempts won", procs, len(incs), procs*2*raceRounds)
}

const raceRounds = 20

func keyOf(i int) string { return strconv.Itoa(i) }

// raceChild is one process of TestProcessesRace: for every round it tries
// to create m/ROUND, recording its wins under win/ROUND/PID, and it adds
// one to the counter object as often as it can with IfMatch, recording
// each success under inc/PID-N. It exits non-zero on any unexpected error.
func raceChild() {
	dir := os.Getenv("FILESINK_RACE_DIR")
	s, err := New(dir)
	if err != nil {
		log.Fatal(err)
	}
	b := sink.New(s)
	ctx := context.Background()
	pid := strconv.Itoa(os.Getpid())
	for i := range raceRounds {
		_, err := b.PutBytes(ctx, "m/"+keyOf(i), []byte(pid), sink.PutOptions{IfNoneMatch: true})
		switch {
		case err == nil:
			if _, err := b.PutBytes(ctx, "win/"+keyOf(i)+"/"+pid, nil, sink.PutOptions{}); err != nil {
				log.Fatal(err)
			}
		case !errors.Is(err, sink.ErrPrecondition):
			log.Fatal(err)
		}
	}
	incs := 0
	for range 2 * raceRounds {
		data, a, err := b.ReadAll(ctx, "counter", 100)
		var opts sink.PutOptions
		switch {
		case errors.Is(err, sink.ErrNotFound):
			data, opts.IfNoneMatch = []byte("0"), true
		case err != nil:
			log.Fatal(err)
		default:
			opts.IfMatch = a.ETag
		}
		n, err := strconv.Atoi(string(data))
		if err != nil {
			log.Fatal(err)
		}
		_, err = b.PutBytes(ctx, "counter", []byte(strconv.Itoa(n+1)), opts)
		switch {
		case err == nil:
			incs++
			if _, err := b.PutBytes(ctx, "inc/"+pid+"-"+strconv.Itoa(incs), nil, sink.PutOptions{}); err != nil {
				log.Fatal(err)
			}
		case !errors.Is(err, sink.ErrPrecondition):
			log.Fatal(err)
		}
	}
}

// failing is a body of 1000 bytes whose reads fail.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("read fails") }
func (failing) Seek(off int64, whence int) (int64, error) {
	if whence == io.SeekEnd {
		return 1000 + off, nil
	}
	return off, nil
}

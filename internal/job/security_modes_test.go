package job_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/keys"
)

// Maximum permissions of what the job creates on disk (issue 9,
// "Security"): files 0640, folders 0750; the scratch folder and what is
// in it (spill runs, reject logs, encoded files) are private, 0600/0700.
const (
	maxFileMode    fs.FileMode = 0o640
	maxDirMode     fs.FileMode = 0o750
	privateFile    fs.FileMode = 0o600
	privateDirMode fs.FileMode = 0o700
)

// modeLog records the permissions of every file and folder seen under
// some roots, with a name pattern per kind of file.
type modeLog struct {
	mu    sync.Mutex
	modes map[string]fs.FileMode // path -> permissions (with ModeDir)
}

func (l *modeLog) walk(t *testing.T, root string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.modes == nil {
		l.modes = map[string]fs.FileMode{}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil // removed while walking (the run goes on), or the test's own folder
		}
		if info, err := d.Info(); err == nil {
			l.modes[p] = info.Mode().Perm() | info.Mode()&fs.ModeDir
		}
		return nil
	})
}

// check fails for any mode beyond the bounds and returns a summary: how
// many of each kind (by name pattern) were seen, with their modes.
func (l *modeLog) check(t *testing.T, file, dir fs.FileMode) string {
	t.Helper()
	kinds := map[string]map[fs.FileMode]int{}
	for p, m := range l.modes {
		limit := file
		if m&fs.ModeDir != 0 {
			limit = dir
		}
		if m.Perm()&^limit != 0 {
			t.Errorf("%s has mode %v, beyond %v", p, m, limit)
		}
		kind := kindOf(filepath.Base(p), m)
		if kinds[kind] == nil {
			kinds[kind] = map[fs.FileMode]int{}
		}
		kinds[kind][m]++
	}
	var out []string
	for k, ms := range kinds {
		for m, n := range ms {
			out = append(out, fmt.Sprintf("%s %v x%d", k, m, n))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// kindOf names a file by what made it.
func kindOf(name string, m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "dir"
	case strings.HasPrefix(name, "extsort-"):
		return "spill"
	case strings.HasPrefix(name, "rejects-"):
		return "rejects"
	case strings.HasPrefix(name, "enc-"):
		return "encoded"
	case name == ".lock":
		return "lock"
	}
	return "file:" + strings.SplitN(name, "-", 2)[0]
}

// TestFileModes runs a period under umask 0, so that the modes on disk are
// the ones the code asks for, and looks at the scratch folder while the
// period is being read (held at its last partition: spill runs and reject
// logs exist) and while its files are uploaded (encoded files exist), then
// at the sink folder and the embedded store.
func TestFileModes(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	e := newEnv(t, embeddedStack)
	var items []item.Item
	for i := range 400 { // 4 KB sort budget: many spill runs
		items = append(items, purchase(fmt.Sprintf("tx-%03d", i), fmt.Sprintf("a-%d", i%3), 1999, at(0, 0).Add(time.Duration(i)*8*time.Second)))
	}
	e.put(items...)
	var bad []item.Item
	for i := range 20 {
		it := purchase(fmt.Sprintf("bad-%d", i), "acme", 100, at(0, i))
		it.Attrs[item.AttrCurrency] = item.S("usd")
		bad = append(bad, it)
	}
	e.put(bad...)

	j := e.job("a")
	hold := newHoldSource(j.Source, keys.Quarter(at(0, 45)))
	j.Source = hold
	scratch := &modeLog{}
	e.drv.setFail(func(string) error { scratch.walk(t, e.tempDir); return nil })
	done := make(chan error, 1)
	go func() {
		_, err := j.Run(context.Background(), job.RunOptions{Now: at(1, 2)})
		done <- err
	}()
	<-hold.entered
	scratch.walk(t, e.tempDir)
	close(hold.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	summary := scratch.check(t, privateFile, privateDirMode)
	t.Logf("scratch: %s", summary)
	for _, kind := range []string{"spill", "rejects", "encoded", "lock"} {
		if !strings.Contains(summary, kind+" ") {
			t.Errorf("no %s file seen in the scratch folder: %s", kind, summary)
		}
	}
	if left := osReadDir(t, e.tempDir); len(left) != 0 {
		t.Errorf("scratch left after the run: %v", left)
	}

	out := &modeLog{}
	out.walk(t, e.drv.Bucket.(interface{ Dir() string }).Dir())
	t.Logf("sink: %s", out.check(t, maxFileMode, maxDirMode))
	db := &modeLog{}
	db.walk(t, filepath.Dir(e.st.(interface{ Path() string }).Path()))
	t.Logf("embedded store: %s", db.check(t, privateFile, maxDirMode))
}

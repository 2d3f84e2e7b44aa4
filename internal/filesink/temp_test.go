package filesink

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// blockingBody is a body whose reads stop after the first chunk until
// release is closed (a Put in progress).
type blockingBody struct {
	n       int
	started chan struct{}
	release chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if b.n == 1 {
		close(b.started)
		<-b.release
	}
	p[0] = 'x'
	b.n++
	return 1, nil
}

func (b *blockingBody) Seek(int64, int) (int64, error) { return 0, nil }

// killedPut runs the test named test again in a child process, where
// (FILESINK_DIE_DIR set) killedPut opens a Sink on a new folder and the
// process is killed in the middle of a Put of key with opts; it returns
// that folder.
func killedPut(t *testing.T, test, key string, opts driver.PutOptions) string {
	t.Helper()
	if dir := os.Getenv("FILESINK_DIE_DIR"); dir != "" {
		s, err := New(dir)
		if err != nil {
			panic(err)
		}
		body := &blockingBody{started: make(chan struct{}), release: make(chan struct{})}
		go func() {
			<-body.started
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}()
		s.Put(context.Background(), key, body, 1<<20, opts)
		select {}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "FILESINK_DIE_DIR="+dir)
	if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child: %v", err)
	}
	return dir
}

// TestDeadPutLeavesNoTemp: a process killed in the middle of a Put into an
// agency folder leaves a temporary file; the next process that opens the
// sink removes it, so no temporary file is left anywhere under the sink.
func TestDeadPutLeavesNoTemp(t *testing.T) {
	dir := killedPut(t, "TestDeadPutLeavesNoTemp", "agencies/agency=a/period=p/summary-1.csv", driver.PutOptions{})
	if tmp := hidden(t, dir); len(tmp) != 1 {
		t.Fatalf("the killed Put left %q, want one temporary file", tmp)
	}
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "agencies/agency=b/period=p/summary-2.csv", "b")
	if tmp := hidden(t, dir); len(tmp) != 0 {
		t.Fatalf("temporary files left after a rerun: %q", tmp)
	}
}

// TestLiveTempSurvivesNew: opening the sink (which removes the temporary
// files of dead processes) never removes a live Put's temporary file.
func TestLiveTempSurvivesNew(t *testing.T) {
	dir := t.TempDir()
	a, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	body := &blockingBody{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error)
	go func() {
		_, err := a.Put(context.Background(), "agencies/agency=a/period=p/x.csv", io.ReadSeeker(body), 3, driver.PutOptions{})
		done <- err
	}()
	<-body.started
	b, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if tmp := hidden(t, dir); len(tmp) != 1 {
		t.Fatalf("a live Put's temporary file: %q", tmp)
	}
	close(body.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("live Put: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("live Put hangs")
	}
	if _, err := os.Stat(filepath.Join(dir, "agencies/agency=a/period=p/x.csv")); err != nil {
		t.Fatal(err)
	}
}

// put writes body at key.
func put(t *testing.T, s *Sink, key, body string) {
	t.Helper()
	if _, err := s.Put(context.Background(), key, strings.NewReader(body), int64(len(body)), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// flagFence is a Fence the test turns off.
type flagFence struct{ lost atomic.Bool }

func (f *flagFence) Check() error {
	if f.lost.Load() {
		return checkpoint.ErrLeaseLost
	}
	return nil
}

// gatedBucket holds every Put of a key containing gate until open is
// closed, and records the keys written.
type gatedBucket struct {
	driver.Bucket
	gate string
	held chan struct{} // closed when a gated Put is waiting
	open chan struct{}
	once sync.Once
	mu   sync.Mutex
	puts []string
}

func (b *gatedBucket) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, o driver.PutOptions) (driver.Attrs, error) {
	if strings.Contains(key, b.gate) {
		b.once.Do(func() { close(b.held) })
		<-b.open
	}
	b.mu.Lock()
	b.puts = append(b.puts, key)
	b.mu.Unlock()
	return b.Bucket.Put(ctx, key, body, size, o)
}

func newGated(t *testing.T, gate string) *gatedBucket {
	t.Helper()
	fs, err := filesink.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &gatedBucket{Bucket: fs, gate: gate, held: make(chan struct{}), open: make(chan struct{})}
}

// beginSession begins the first publication of a test period into d,
// fenced by fence, with 4 uploads at a time.
func beginSession(t *testing.T, d driver.Bucket, fence Fence) (report.Period, *Session) {
	t.Helper()
	pb := &Publisher{Bucket: sink.New(d), Fence: fence, RunID: "run", Concurrency: 4, Log: slog.New(slog.DiscardHandler)}
	p := report.Period{Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)}
	ctx := context.Background()
	cur, err := pb.Current(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := pb.Begin(ctx, cur, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, sess
}

// tempFiles makes n encoded files of period p.
func tempFiles(t *testing.T, p report.Period, n int) []encode.File {
	t.Helper()
	var out []encode.File
	for i := range n {
		body := fmt.Appendf(nil, "object %d", i)
		path := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		key := report.DatasetPrefix(report.DatasetSummary, p) + report.HashedName("summary", "parquet", sum)
		out = append(out, encode.File{Key: key, Path: path, Bytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])})
	}
	return out
}

// TestUploadFencedAfterIntent: the uploads of a period wait while the
// first one writes the intent; when the lease is lost meanwhile (the
// process was stopped past its lease, as the overlap suite's SIGSTOP does)
// none of them writes its object. Before the fix, they had checked the
// fence before the intent, and wrote after it.
func TestUploadFencedAfterIntent(t *testing.T) {
	b := newGated(t, "/pending-")
	fence := &flagFence{}
	p, sess := beginSession(t, b, fence)
	done := make(chan error, 1)
	go func() {
		for _, f := range tempFiles(t, p, 4) {
			if err := sess.Upload(f); err != nil {
				done <- err
				return
			}
		}
		_, err := sess.Wait()
		done <- err
	}()
	<-b.held // the intent's write is in progress, the other uploads wait
	time.Sleep(50 * time.Millisecond)
	fence.lost.Store(true) // the lease expired meanwhile
	close(b.open)
	if err := <-done; !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("uploads after the lease was lost: %v, want ErrLeaseLost", err)
	}
	for _, k := range b.puts {
		if !report.IsIntentKey(k) {
			t.Errorf("object written after the lease was lost: %s", k)
		}
	}
}

// TestCleanupFencedPerDelete: deletes that wait for a slot check the fence
// again: a cleanup whose lease is lost while its first deletes run deletes
// nothing more.
func TestCleanupFencedPerDelete(t *testing.T) {
	fs, err := filesink.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fence := &flagFence{}
	slow := &slowDeletes{Bucket: fs, fence: fence, started: make(chan struct{}, 100), release: make(chan struct{})}
	pb := &Publisher{Bucket: sink.New(slow), Fence: fence, RunID: "run", Concurrency: 2, Log: slog.New(slog.DiscardHandler)}
	p := report.Period{Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2024, 3, 1, 1, 0, 0, 0, time.UTC)}
	ctx := context.Background()
	var keys []string
	for i := range 10 {
		k := fmt.Sprintf("%sx-%d", report.DatasetPrefix(report.DatasetSummary, p), i)
		if _, err := pb.Bucket.PutBytes(ctx, k, []byte("x"), sink.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	done := make(chan error, 1)
	go func() { done <- pb.deleteAll(ctx, p, keys, true) }()
	<-slow.started
	<-slow.started // both slots busy
	fence.lost.Store(true)
	close(slow.release)
	if err := <-done; !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("deleteAll: %v, want ErrLeaseLost", err)
	}
	if n := slow.n.Load(); n != 2 {
		t.Errorf("%d deletes issued, want the 2 in flight when the lease was lost", n)
	}
}

// slowDeletes holds each Delete until release is closed.
type slowDeletes struct {
	driver.Bucket
	fence   *flagFence
	n       atomic.Int64
	started chan struct{}
	release chan struct{}
}

func (b *slowDeletes) Delete(ctx context.Context, key string) error {
	b.n.Add(1)
	b.started <- struct{}{}
	<-b.release
	return b.Bucket.Delete(ctx, key)
}

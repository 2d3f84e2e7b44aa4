package publish

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// syncOrder is a folder sink that records, in order, each write that
// reaches it ("put KEY", "put KEY deferred") and each Sync ("sync").
type syncOrder struct {
	*filesink.Sink
	mu  sync.Mutex
	ops []string
}

func (b *syncOrder) log(op string) {
	b.mu.Lock()
	b.ops = append(b.ops, op)
	b.mu.Unlock()
}

func putOp(key string, o driver.PutOptions) string {
	if o.Defer {
		return "put " + key + " deferred"
	}
	return "put " + key
}

func (b *syncOrder) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, o driver.PutOptions) (driver.Attrs, error) {
	b.log(putOp(key, o))
	return b.Sink.Put(ctx, key, body, size, o)
}

func (b *syncOrder) PutFile(ctx context.Context, key, path string, size int64, o driver.PutOptions) (driver.Attrs, error) {
	b.log(putOp(key, o))
	return b.Sink.PutFile(ctx, key, path, size, o)
}

func (b *syncOrder) Sync(ctx context.Context) error {
	b.log("sync")
	return b.Sink.Sync(ctx)
}

// TestObjectsSyncedBeforeManifest: a publication uploads its objects
// deferred (a folder sink batches their fsyncs) and makes them durable
// with one Sync after the last upload and before the manifest that lists
// them; the intent, the due marker and the manifest are durable Puts.
func TestObjectsSyncedBeforeManifest(t *testing.T) {
	fs, err := filesink.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	b := &syncOrder{Sink: fs}
	p, sess := beginSession(t, b, &flagFence{})
	ctx := context.Background()
	files := tempFiles(t, p, 6)
	for _, f := range files {
		if err := sess.Upload(f); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := sess.Wait()
	if err != nil {
		t.Fatal(err)
	}
	m := &report.Manifest{Job: "j", PeriodStart: p.Start, PeriodEnd: p.End, Revision: 1, Reason: report.ReasonDelivery, Files: infos}
	if err := sess.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	ops := slices.Clone(b.ops)
	syncAt := slices.Index(ops, "sync")
	manifestAt := slices.Index(ops, "put "+report.ManifestKey(p))
	if syncAt < 0 || manifestAt < syncAt {
		t.Fatalf("no Sync before the manifest: %q", ops)
	}
	deferred := 0
	for i, op := range ops {
		switch {
		case strings.HasSuffix(op, " deferred"):
			deferred++
			if i > syncAt {
				t.Errorf("%s after the Sync", op)
			}
		case strings.HasPrefix(op, "put ") && !strings.Contains(op, "/manifests/") && !strings.HasPrefix(op, "put manifests/"):
			t.Errorf("an object uploaded without Defer: %s", op)
		}
	}
	if deferred != len(files) {
		t.Errorf("%d deferred uploads, want %d: %q", deferred, len(files), ops)
	}
	if n := strings.Count(strings.Join(ops, "\n"), "sync"); n != 1 {
		t.Errorf("%d Syncs, want 1: %q", n, ops)
	}
}

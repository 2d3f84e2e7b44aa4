package publish

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
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

func (b *syncOrder) Delete(ctx context.Context, key string) error {
	b.log("delete " + key)
	return b.Sink.Delete(ctx, key)
}

func (b *syncOrder) DeleteDeferred(ctx context.Context, key string) error {
	b.log("delete " + key + " deferred")
	return b.Sink.DeleteDeferred(ctx, key)
}

func (b *syncOrder) Sync(ctx context.Context) error {
	b.log("sync")
	return b.Sink.Sync(ctx)
}

// newSyncOrder is a folder sink in a test folder whose writes and Syncs
// are recorded.
func newSyncOrder(t *testing.T) *syncOrder {
	t.Helper()
	fs, err := filesink.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return &syncOrder{Sink: fs}
}

// publishRevision uploads files in sess, waits and commits them as
// revision rev of p; it returns the files of the revision.
func publishRevision(t *testing.T, sess *Session, p report.Period, rev int, reason string, files []encode.File) []report.FileInfo {
	t.Helper()
	for _, f := range files {
		if err := sess.Upload(f); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := sess.Wait()
	if err != nil {
		t.Fatal(err)
	}
	m := &report.Manifest{Job: "j", PeriodStart: p.Start, PeriodEnd: p.End, Revision: rev, Reason: reason, Files: infos}
	if err := sess.Commit(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return infos
}

// TestObjectsSyncedBeforeManifest: a publication uploads its objects
// deferred (a folder sink batches their fsyncs) and makes them durable
// with one Sync after the last upload and before the manifest that lists
// them; the intent, the due marker and the manifest are durable Puts.
func TestObjectsSyncedBeforeManifest(t *testing.T) {
	b := newSyncOrder(t)
	p, sess := beginSession(t, b, &flagFence{})
	files := tempFiles(t, p, 6)
	publishRevision(t, sess, p, 1, report.ReasonDelivery, files)
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

// TestCleanupSyncedBeforeIntents: the cleanup of a revision that replaced
// objects deletes them deferred (a folder sink batches their fsyncs), then
// Syncs, then deletes the intents: a crash before the Sync leaves the
// intents for the next cleanup.
func TestCleanupSyncedBeforeIntents(t *testing.T) {
	b := newSyncOrder(t)
	ctx := context.Background()
	p, sess := beginSession(t, b, &flagFence{})
	infos := publishRevision(t, sess, p, 1, report.ReasonDelivery, tempFiles(t, p, 3))
	// Revision 2 keeps one object of the three: the other two are
	// replaced, and deleted by its cleanup.
	pb := sess.pb
	cur, err := pb.Current(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	sess2, err := pb.Begin(ctx, cur, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept := tempFiles(t, p, 1)[0]
	b.mu.Lock()
	b.ops = nil
	b.mu.Unlock()
	publishRevision(t, sess2, p, 2, report.ReasonRecheck, []encode.File{kept})
	ops := slices.Clone(b.ops)
	manifestAt := slices.Index(ops, "put "+report.ManifestKey(p))
	lastDeferred, syncAt, intentDelete := -1, -1, -1
	deferred := 0
	for i, op := range ops {
		switch {
		case strings.HasPrefix(op, "delete ") && strings.HasSuffix(op, " deferred"):
			deferred++
			lastDeferred = i
		case op == "sync" && i > manifestAt:
			syncAt = i
		case strings.HasPrefix(op, "delete ") && report.IsIntentKey(strings.TrimPrefix(op, "delete ")):
			intentDelete = i
		}
	}
	if deferred != 2 || manifestAt < 0 || lastDeferred < manifestAt || syncAt < lastDeferred || intentDelete < syncAt {
		t.Fatalf("cleanup: %d deferred deletes, want 2, each after the manifest, then a Sync, then the intent's delete: %q", deferred, ops)
	}
	for _, f := range infos {
		if _, err := pb.Bucket.Stat(ctx, f.Key); (err == nil) != (f.Key == kept.Key) {
			t.Errorf("%s after the cleanup: %v", f.Key, err)
		}
	}
}

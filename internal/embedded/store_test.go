package embedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/storetest"
)

func open(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
		return storetest.Backend{Source: s, Writer: s, Checkpoints: s, Outbox: s}
	})
}

// The suite again with tiny pages, so that paging edges (a page ending on
// the last item, `after` inside a page) are crossed many times.
func TestConformanceSmallPages(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{PageSize: 3, PageBytes: 4096})
		return storetest.Backend{Source: s, Writer: s, Checkpoints: s, Outbox: s}
	})
}

func TestOpenCreatesParentDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "reportjob.db")
	s := open(t, path, Options{})
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("second Init: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("store file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("store file mode %v, want no group/other access", perm)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	it := item.Item{PK: "202401010000", SK: "2024-01-01T00:00:00.abc", Attrs: map[string]item.Value{
		"amount": item.N("19.990"), "agency_id": item.S("Agência 日本"),
	}}
	if err := s.PutItems(ctx, []item.Item{it}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC)
	l, err := s.Acquire(ctx, "job", "run-a", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp := time.Date(2024, 1, 1, 0, 0, 0, 123456789, time.UTC)
	if err := s.Commit(ctx, "job", l, now, time.Time{}, cp, checkpoint.Update{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, Options{})
	var got []item.Item
	if err := s.Query(ctx, it.PK, "", func(p []item.Item) error { got = append(got, p...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SK != it.SK || got[0].Attrs["amount"] != it.Attrs["amount"] ||
		got[0].Attrs["agency_id"] != it.Attrs["agency_id"] || len(got[0].Attrs) != 2 {
		t.Errorf("after reopen: %+v, want %+v (exact text)", got, it)
	}
	st, err := s.Load(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if want := cp.Truncate(time.Millisecond); !st.Checkpoint.Equal(want) || st.Lease != l {
		t.Errorf("after reopen: state %+v, want checkpoint %v (whole ms) and lease %+v", st, want, l)
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	open(t, path, Options{})
	start := time.Now()
	s2, err := Open(path, Options{LockTimeout: 200 * time.Millisecond})
	if err == nil {
		_ = s2.Close()
		t.Fatal("second Open of a file in use succeeded")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("second Open: %v, want ErrLocked naming %s", err, path)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second Open took %s, want about the 200ms lock timeout", d)
	}
}

// TestLockedAcrossProcesses runs this test binary again as a child that
// opens the same file, as a second `reportjob run` would.
func TestLockedAcrossProcesses(t *testing.T) {
	if path := os.Getenv("EMBEDDED_TEST_CHILD_OPEN"); path != "" {
		_, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
		fmt.Printf("child open: locked=%t err=%v\n", errors.Is(err, ErrLocked), err)
		return
	}
	path := filepath.Join(t.TempDir(), "store.db")
	s := open(t, path, Options{})
	run := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockedAcrossProcesses$")
		cmd.Env = append(os.Environ(), "EMBEDDED_TEST_CHILD_OPEN="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); !strings.Contains(out, "child open: locked=true") {
		t.Errorf("child Open while the parent holds the file:\n%s", out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out := run(); !strings.Contains(out, "child open: locked=false err=<nil>") {
		t.Errorf("child Open after the parent closed the file:\n%s", out)
	}
}

func TestOpenRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a bbolt file\n", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(junk, Options{}); err == nil {
		_ = s.Close()
		t.Error("Open of a non-bbolt file succeeded")
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open with an empty path succeeded")
	}
}

func TestPutItemsRejectsEmptyKeys(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
	good := item.Item{PK: "202401010000", SK: "2024-01-01T00:00:00.a", Attrs: map[string]item.Value{
		item.AttrTransactionID: item.S("t1")}}
	for _, bad := range []item.Item{
		{PK: "", SK: "2024-01-01T00:00:00.b", Attrs: map[string]item.Value{item.AttrTransactionID: item.S("t2")}},
		{PK: "202401010000", SK: "", Attrs: map[string]item.Value{item.AttrTransactionID: item.S("t2")}},
	} {
		err := s.PutItems(t.Context(), []item.Item{good, bad})
		var we *ingest.WriteError
		if !errors.As(err, &we) || !slices.Equal(we.TransactionIDs, []string{"t1", "t2"}) ||
			!strings.Contains(err.Error(), "empty key") {
			t.Errorf("PutItems with keys (%q, %q): %v, want a WriteError naming t1 and t2", bad.PK, bad.SK, err)
		}
	}
	// Nothing of the refused call was written.
	err := s.Query(t.Context(), good.PK, "", func(p []item.Item) error {
		return fmt.Errorf("unexpected page of %d items", len(p))
	})
	if err != nil {
		t.Error(err)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	tests := []map[string]item.Value{
		{},
		{"a": item.S("")},
		{"amount": item.N("19.990"), "s": item.S("Agência 日本 🚀 \x00 \xff"), "o": {Type: item.Other, Text: "BOOL"}},
	}
	for _, attrs := range tests {
		b := encodeAttrs(attrs)
		got, err := decodeAttrs(b)
		if err != nil {
			t.Fatalf("decode(encode(%v)): %v", attrs, err)
		}
		if len(got) != len(attrs) {
			t.Fatalf("decode(encode(%v)) = %v", attrs, got)
		}
		for k, v := range attrs {
			if got[k] != v {
				t.Errorf("attr %q = %+v, want %+v", k, got[k], v)
			}
		}
		if again := encodeAttrs(got); string(again) != string(b) {
			t.Errorf("encoding of %v is not deterministic", attrs)
		}
		for i := range len(b) { // every truncation is an error, never a panic
			if _, err := decodeAttrs(b[:i]); err == nil {
				t.Errorf("decode of %d of %d bytes succeeded", i, len(b))
			}
		}
	}
}

func TestCheckpointArgs(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Acquire(t.Context(), "", "run-a", now, time.Minute); err == nil {
		t.Error("Acquire with an empty job name succeeded")
	}
	if _, err := s.Acquire(t.Context(), "job", "", now, time.Minute); err == nil {
		t.Error("Acquire with an empty owner succeeded")
	}
	if _, err := s.Acquire(t.Context(), "job", "run-a", now, 0); err == nil {
		t.Error("Acquire with a zero ttl succeeded")
	}
	if st, err := s.Load(t.Context(), "job"); err != nil || st.Lease != (checkpoint.Lease{}) || !st.Checkpoint.IsZero() {
		t.Errorf("refused Acquires left state %+v, %v", st, err)
	}
}

package main

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// TestOpsScheduleInProcess runs `schedule` on "@every 1s" with one period
// a day behind and at most 2 periods a run, so that every tick has work;
// SIGTERM (ctx cancelled) arrives while the third run builds a period.
// schedule returns nil once that period is committed, and the checkpoint
// is the end of the last manifest delivered.
func TestOpsScheduleInProcess(t *testing.T) {
	start := time.Now().UTC().Truncate(15 * time.Minute).Add(-24 * time.Hour)
	h := newHarness(t, harnessOptions{period: "15m", start: start.Format(time.RFC3339),
		extra: "  max_periods_per_run: 2", top: `schedule: {cron: "@every 1s"}`})
	opsPut(h, start, start.Add(3*time.Hour), 3)

	c := h.cli()
	var stdout opsBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &opsLogWatch{match: []byte(`"msg":"building period"`), n: 5, fn: cancel}
	c.stdout = &stdout
	c.base = newLogger(c.cfg, stderr, false)
	c.log = c.base

	done := make(chan error, 1)
	go func() { done <- c.schedule(ctx, 20*time.Second) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("schedule: %v", err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("schedule did not stop; stdout:\n%s", stdout.String())
	}
	if ctx.Err() == nil {
		t.Fatalf("schedule returned before the signal\n%s", stdout.String())
	}

	sums := opsSummaries(t, stdout.String(), "run")
	processed := 0
	for i, s := range sums {
		if s["status"] != "ok" {
			t.Errorf("scheduled run %d: %v", i, s)
		}
		processed += opsInt(t, s, "periods_processed")
	}
	if len(sums) < 3 || processed < 5 {
		t.Fatalf("%d scheduled runs processed %d periods, want at least 3 runs and 5 periods:\n%s", len(sums), processed, stdout.String())
	}
	last := sums[len(sums)-1]
	if opsInt(t, last, "periods_processed") < 1 {
		t.Errorf("the run in progress at the signal did not commit its period: %v", last)
	}
	wantCP := start.Add(time.Duration(processed) * 15 * time.Minute).Format(time.RFC3339)
	st := opsStatus(h, time.Now().UTC().Format(time.RFC3339))
	if st["checkpoint"] != wantCP || last["checkpoint"] != wantCP {
		t.Fatalf("checkpoint %v (last summary %v), want %s after %d periods", st["checkpoint"], last["checkpoint"], wantCP, processed)
	}
	ms := opsManifests(h)
	var maxEnd time.Time
	for _, end := range ms {
		if end.After(maxEnd) {
			maxEnd = end
		}
	}
	if len(ms) != processed || maxEnd.Format(time.RFC3339) != wantCP {
		t.Errorf("%d manifests, last ending %s; want %d ending at the checkpoint %s", len(ms), maxEnd, processed, wantCP)
	}
	opsStoppedStatements(h, processed)
}

// opsBuffer is a bytes.Buffer safe for concurrent use.
type opsBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *opsBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *opsBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// opsLogWatch is a log writer that calls fn when the nth line containing
// match is written (slog writes one record per Write).
type opsLogWatch struct {
	mu    sync.Mutex
	match []byte
	n     int
	seen  int
	fn    func()
	buf   bytes.Buffer
}

func (w *opsLogWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Contains(p, w.match) {
		w.seen++
		if w.seen == w.n {
			w.fn()
		}
	}
	return len(p), nil
}

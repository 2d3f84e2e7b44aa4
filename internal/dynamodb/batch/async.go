package batch

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchBytes bounds the requests of one AsyncWriter batch (BatchWriteItem
// takes up to 16 MB; smaller batches bound the memory in flight).
const maxBatchBytes = 4 << 20

// AsyncWriter writes requests to one table in BatchWriteItem calls of up to
// 25 requests (and about maxBatchBytes), with up to Concurrency calls in
// flight, each retried as Write does. The first failure is kept and
// returned by every later Put and Flush; batches not sent yet are then
// dropped. Its methods must be called from one goroutine.
type AsyncWriter struct {
	r     *Retrier
	ctx   context.Context
	table string
	batch []types.WriteRequest
	size  int
	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

// NewAsyncWriter returns an AsyncWriter to table whose calls use ctx.
func (r *Retrier) NewAsyncWriter(ctx context.Context, table string) *AsyncWriter {
	return &AsyncWriter{r: r, ctx: ctx, table: table, slots: make(chan struct{}, max(r.Concurrency, 1))}
}

// Put queues req, whose encoded size is about size bytes. Keys must be
// distinct within a batch: callers put each key once.
func (w *AsyncWriter) Put(req types.WriteRequest, size int) error {
	if err := w.Failed(); err != nil {
		return err
	}
	w.batch = append(w.batch, req)
	w.size += size
	if len(w.batch) == Size || w.size >= maxBatchBytes {
		w.send()
	}
	return nil
}

// send starts writing the queued batch, once a slot is free.
func (w *AsyncWriter) send() {
	b := w.batch
	w.batch, w.size = nil, 0
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		w.fail(fmt.Errorf("batch write to table %q: %w", w.table, w.ctx.Err()))
		return
	}
	w.wg.Go(func() {
		defer func() { <-w.slots }()
		if left, err := w.r.Write(w.ctx, w.table, b); err != nil {
			w.fail(fmt.Errorf("%d of %d writes not done: %w", len(left), len(b), err))
		}
	})
}

// Flush writes what is queued, waits for every call in flight and returns
// the first failure.
func (w *AsyncWriter) Flush() error {
	if len(w.batch) > 0 && w.Failed() == nil {
		w.send()
	}
	w.wg.Wait()
	return w.Failed()
}

// Wait drops what is queued and waits for the calls in flight.
func (w *AsyncWriter) Wait() {
	w.batch, w.size = nil, 0
	w.wg.Wait()
}

func (w *AsyncWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Failed returns the first failure, nil when none.
func (w *AsyncWriter) Failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

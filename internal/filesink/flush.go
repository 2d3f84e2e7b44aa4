package filesink

import (
	"sync"
	"sync/atomic"
)

// Background write-out of deferred Puts.
//
// The files of deferred Puts stay dirty in the page cache until the
// kernel's own write-back starts (dirty_background_ratio: 10 % of the
// available memory, about 2 GB on a 24 GB machine) or until Sync's syncfs
// writes them. A period of 100,000 agencies ended with 2 GB dirty: its
// Sync waited 2 to 4 s for the disk with the CPUs mostly idle, and the
// month's Sync after its statements 2 to 2.5 s. So once flushEvery bytes
// of deferred files were written since the last one, a Put starts a
// syncfs(2) of DIR's file system on a goroutine of its own (one at a
// time): the disk writes while the job encodes the next files, and Sync
// finds little left to wait for.
//
// It is a hint. It makes nothing durable that Sync would not, and it
// takes none of Sync's errors: syncfs reports a write-back error once to
// each open file, and the flush opens DIR for itself, so Sync's
// descriptor (opened by New) still reports every one since New. Where
// syncfs is not trusted (syncfsUsable) or not Linux's, there is none.

// flushEvery is how many bytes of deferred files start a flush (a
// variable for the tests).
var flushEvery int64 = 256 << 20

// flushFilesystem writes out DIR's file system and ignores its error
// (flushFS; a test records the calls).
var flushFilesystem = flushFS

// flusher is the Sink's background write-out.
type flusher struct {
	unflushed atomic.Int64 // bytes of deferred files since the last flush
	running   atomic.Bool
	wg        sync.WaitGroup // the running flush (Close waits for it)
	usable    func() bool    // syncfs is trusted on DIR's file system
}

// noteDeferred counts n bytes of a deferred Put's file and starts a
// flush when flushEvery were written since the last one and none runs.
func (s *Sink) noteDeferred(n int64) {
	fl := &s.flush
	if fl.unflushed.Add(n) < flushEvery || !fl.usable() || !fl.running.CompareAndSwap(false, true) {
		return
	}
	fl.unflushed.Store(0)
	fl.wg.Go(func() {
		defer fl.running.Store(false)
		flushFilesystem(s.dir)
	})
}

// Package extsort sorts records larger than memory: byte-string keys and
// values, ordered by bytes.Compare(key), then bytes.Compare(value), so the
// order is total and deterministic whatever the order of Add calls or the
// number of goroutines adding. Records equal in key and value are kept as
// separate records.
//
// Records are buffered in memory up to half of Options.MemBytes; a full
// buffer is sorted (a radix sort on the key bytes) and written to a run
// file in the background while Adds fill the other half. Sort merges the
// runs with the last buffer, which stays in memory. A sorter whose records
// never filled a buffer sorts in memory, on every CPU, and touches no disk.
//
// The merge reads at most a fan-in of runs at once (MemBytes/256 KiB,
// between MinFanIn and MaxFanIn). With more runs than that, Sort first
// merges the smallest runs into bigger ones, in passes, until the rest fit
// the fan-in: each such pass writes the records it merges once more. With
// the default budget (32 MiB, fan-in 128) that starts beyond about 2 GiB of
// records.
//
// Run files live in Options.Dir, mode 0600, named extsort-*.run, and are
// checksummed: a corrupt or truncated run is an error wrapping ErrCorrupt
// and naming the file, never a silent short read. A run is read once, so
// on Linux a merge frees each run's bytes behind it as it reads (a hole
// punched every MiB): the disk and page cache a sorter holds shrink as its
// records are consumed, instead of all at Close.
package extsort

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

const (
	// DefaultMemBytes is the budget when Options.MemBytes is 0.
	DefaultMemBytes = 32 << 20
	// MaxRecordBytes is the largest len(key)+len(value) Add accepts.
	MaxRecordBytes = 1 << 30
	// MinFanIn and MaxFanIn bound how many runs a merge reads at once.
	MinFanIn = 8
	MaxFanIn = 128
)

var (
	// ErrClosed is returned by a sorter, or its iterator, after Close.
	ErrClosed = errors.New("extsort: sorter closed")
	// ErrSorted is returned by Add and Sort after Sort.
	ErrSorted = errors.New("extsort: sorter already sorted")
	// ErrTooLarge is returned by Add for a record over MaxRecordBytes.
	ErrTooLarge = errors.New("extsort: record too large")
	// ErrCorrupt is wrapped by the error of a run file that is not as it
	// was written: cut short, changed, or not a run file.
	ErrCorrupt = errors.New("extsort: corrupt run file")
)

// Options configures a Sorter.
type Options struct {
	// Dir is the folder for run files; "" means os.TempDir(). The sorter
	// removes its own files on Close; the folder is the caller's.
	Dir string
	// MemBytes is the budget for buffered records, counting the sorter's
	// index (16 bytes a record) and a 4-byte header a record; 0 (or less)
	// means DefaultMemBytes. Adding uses it all: two buffers of MemBytes/2
	// (at most 2 GiB each), one filling while the other spills. On top
	// come up to a 1 MiB chunk a buffer, the index's spare capacity, and a
	// 64 KiB write buffer. Sort keeps one buffer and adds a reader for
	// each run merged, about 64 KiB each: at most MemBytes/4, or
	// MinFanIn×64 KiB for small budgets. A record larger than a buffer is
	// still accepted, alone in its buffer.
	MemBytes int
}

// Stats counts what a sorter did, for logs and benchmarks.
type Stats struct {
	// Records is the number of records added.
	Records int64
	// Runs is the number of run files written by spilling full buffers.
	Runs int64
	// MergedRuns is the number of run files written by merge passes (see
	// the package comment); 0 unless there were more runs than the fan-in.
	MergedRuns int64
	// SpilledBytes is the number of bytes written to run files, merge
	// passes included.
	SpilledBytes int64
}

type state int

const (
	adding state = iota
	sorted
	closed
)

// Sorter sorts records; see the package comment. Add and AddBatch are
// safe for concurrent use; Sort and Close may be called from any
// goroutine, Close more than once. The zero Sorter is not usable: call New.
type Sorter struct {
	dir   string
	limit int // bytes of one buffer
	fanIn int

	stop       atomic.Bool // set by Close: background work gives up early
	records    atomic.Int64
	runs       atomic.Int64
	mergedRuns atomic.Int64
	written    atomic.Int64

	mu      sync.Mutex
	state   state
	err     error // sticky: a failed spill lost records
	cur     *buffer
	spare   *buffer   // nil while it is being spilled, or not yet made
	job     *spillJob // the spill in flight, if any
	files   []runFile // finished runs
	garbage []string  // merged runs whose removal failed; retried by Close
	it      *Iterator
}

// spillJob is a buffer being sorted and written by a background goroutine.
type spillJob struct {
	buf  *buffer
	done chan struct{}
	run  runFile
	err  error
}

// New returns a sorter with opts. It creates no file until a buffer fills.
func New(opts Options) *Sorter {
	mem := opts.MemBytes
	if mem <= 0 {
		mem = DefaultMemBytes
	}
	dir := opts.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	limit := min(max(mem/2, 1), maxBufferBytes)
	return &Sorter{
		dir:   dir,
		limit: limit,
		fanIn: min(max(mem/(4*blockTarget), MinFanIn), MaxFanIn),
		cur:   newBuffer(limit),
	}
}

// Add copies key and value into the sorter. It is safe for concurrent
// use. When a buffer fills, Add hands it to a background spill and goes on
// with the other buffer; it waits only if the previous spill has not
// finished. An error from a spill is returned by every later Add and by
// Sort: the sorter has lost records and must be closed.
func (s *Sorter) Add(key, value []byte) error {
	if n := len(key) + len(value); n > MaxRecordBytes {
		return fmt.Errorf("extsort: add: record of %d bytes (key %d, value %d) over the %d-byte limit: %w",
			n, len(key), len(value), MaxRecordBytes, ErrTooLarge)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addableLocked(); err != nil {
		return err
	}
	s.cur.add(key, value)
	s.records.Add(1)
	if !s.cur.full() {
		return nil
	}
	return s.spillLocked()
}

// addableLocked returns why records cannot be added, nil if they can.
func (s *Sorter) addableLocked() error {
	switch {
	case s.state == closed:
		return ErrClosed
	case s.state == sorted:
		return ErrSorted
	}
	return s.err
}

// spillLocked hands the full current buffer to a background spill and
// goes on with the other one, once the previous spill is done.
func (s *Sorter) spillLocked() error {
	if err := s.waitSpillLocked(); err != nil {
		return err
	}
	b := s.cur
	s.cur = s.spare
	s.spare = nil
	if s.cur == nil {
		s.cur = newBuffer(s.limit)
	}
	j := &spillJob{buf: b, done: make(chan struct{})}
	s.job = j
	go func() {
		defer close(j.done)
		j.run, j.err = s.spill(b)
	}()
	return nil
}

// spill sorts b and writes it to a new run file. It runs without s.mu.
func (s *Sorter) spill(b *buffer) (runFile, error) {
	b.sort(1) // Adds go on meanwhile, on the other buffer
	w, err := createRun(s.dir, &s.stop, &s.written)
	if err != nil {
		return runFile{}, err
	}
	for _, e := range b.index {
		k, v := b.record(e)
		if err := w.add(k, v); err != nil {
			w.discard()
			return runFile{}, err
		}
	}
	r, err := w.finish()
	if err == nil {
		s.runs.Add(1)
	}
	return r, err
}

// waitSpillLocked waits for the spill in flight, if any, and takes its
// outcome: a run file, or the sticky error.
func (s *Sorter) waitSpillLocked() error {
	if j := s.job; j != nil {
		<-j.done
		s.job = nil
		j.buf.reset()
		s.spare = j.buf
		if j.err != nil && s.err == nil {
			s.err = j.err
		}
		if j.err == nil {
			s.files = append(s.files, j.run)
		}
	}
	return s.err
}

// Sort ends the adds and returns an iterator over every record in order.
// A sorter that never spilled sorts in memory and touches no disk. Sort
// may be called once; the iterator's records stay valid until Next or
// Close.
func (s *Sorter) Sort() (*Iterator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case closed:
		return nil, ErrClosed
	case sorted:
		return nil, ErrSorted
	}
	s.state = sorted
	if err := s.waitSpillLocked(); err != nil {
		return nil, err
	}
	s.spare = nil
	s.cur.sort(runtime.GOMAXPROCS(0))
	mem := &memSource{b: s.cur, index: s.cur.index}
	if len(s.files) == 0 {
		s.it = &Iterator{mem: mem}
		return s.it, nil
	}
	var extra []source
	if len(mem.index) > 0 {
		extra = append(extra, mem)
	}
	if err := s.mergePassesLocked(len(extra)); err != nil {
		return nil, err
	}
	srcs := make([]source, 0, len(s.files)+len(extra))
	for _, f := range s.files {
		r, err := openRun(f.name)
		if err != nil {
			for _, src := range srcs {
				src.close()
			}
			return nil, err
		}
		srcs = append(srcs, r)
	}
	m, err := newMerger(append(srcs, extra...))
	if err != nil {
		return nil, err
	}
	s.it = &Iterator{m: m}
	return s.it, nil
}

// mergePassesLocked merges the smallest runs together until the runs and
// the extra in-memory sources fit the fan-in.
func (s *Sorter) mergePassesLocked(extra int) error {
	for len(s.files)+extra > s.fanIn {
		k := min(s.fanIn, len(s.files)+extra-s.fanIn+1)
		slices.SortStableFunc(s.files, func(a, b runFile) int { return cmp.Compare(a.size, b.size) })
		out, err := s.mergeRuns(s.files[:k])
		if err != nil {
			return err
		}
		for _, f := range s.files[:k] {
			if err := os.Remove(f.name); err != nil {
				s.garbage = append(s.garbage, f.name)
			}
		}
		s.files = append(slices.Clone(s.files[k:]), out)
		s.mergedRuns.Add(1)
	}
	return nil
}

// mergeRuns merges files into a new run file.
func (s *Sorter) mergeRuns(files []runFile) (runFile, error) {
	srcs := make([]source, 0, len(files))
	for _, f := range files {
		r, err := openRun(f.name)
		if err != nil {
			for _, src := range srcs {
				src.close()
			}
			return runFile{}, err
		}
		srcs = append(srcs, r)
	}
	m, err := newMerger(srcs)
	if err != nil {
		return runFile{}, err
	}
	defer m.close()
	w, err := createRun(s.dir, &s.stop, &s.written)
	if err != nil {
		return runFile{}, err
	}
	for m.next() {
		if err := w.add(m.key(), m.value()); err != nil {
			w.discard()
			return runFile{}, err
		}
	}
	if m.err != nil {
		w.discard()
		return runFile{}, m.err
	}
	return w.finish()
}

// Close removes every run file of the sorter and releases its memory. It
// may be called more than once and at any time: before Sort (it waits for a
// spill in flight, which gives up at its next block), or during iteration
// (Next then returns false and Err returns ErrClosed), but not while Next
// runs. After Close, no file of this sorter remains and none is open.
func (s *Sorter) Close() error {
	s.stop.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == closed {
		return nil
	}
	s.state = closed
	if j := s.job; j != nil {
		<-j.done
		s.job = nil
		if j.err == nil {
			s.files = append(s.files, j.run)
		}
	}
	var errs []error
	if s.it != nil {
		errs = append(errs, s.it.close())
	}
	for _, f := range s.files {
		s.garbage = append(s.garbage, f.name)
	}
	for _, name := range s.garbage {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("extsort: remove run file: %w", err))
		}
	}
	s.files, s.garbage = nil, nil
	s.cur, s.spare = nil, nil
	return errors.Join(errs...)
}

// Stats returns the sorter's counters so far. It is safe for concurrent
// use.
func (s *Sorter) Stats() Stats {
	return Stats{
		Records:      s.records.Load(),
		Runs:         s.runs.Load(),
		MergedRuns:   s.mergedRuns.Load(),
		SpilledBytes: s.written.Load(),
	}
}

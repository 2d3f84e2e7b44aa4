package extsort

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync/atomic"
)

// Run file format (all integers little-endian):
//
//	magic   "RJXSORT1"
//	block*  length uint32 (> 0), crc uint32 (CRC-32C of the payload), payload
//	trailer 0 uint32, crc uint32 (CRC-32C of count), count uint64
//
// A payload holds whole records, each uvarint(len(key)) uvarint(len(value))
// key value. A block is checked before any of its records is used; the
// trailer's count is checked against the records read, and nothing may
// follow it. A run file cut short anywhere, or changed, is an error.
const (
	runMagic    = "RJXSORT1"
	blockHeader = 8
	trailerLen  = blockHeader + 8
	// blockTarget is the payload size at which a writer ends a block; a
	// reader's buffer is about this size too.
	blockTarget = 64 << 10
	// releaseStep is how far a reader gets past the last released byte
	// before it releases what it has read (see runReader.releaseRead).
	releaseStep = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// runFile is a finished run on disk.
type runFile struct {
	name    string
	size    int64
	records int64
}

// runWriter writes one run file. It is not safe for concurrent use.
type runWriter struct {
	f       *os.File
	name    string
	block   []byte // blockHeader bytes reserved, then the payload
	records int64
	size    int64
	stop    *atomic.Bool // set when the sorter closes: give up early
	written *atomic.Int64
}

// createRun creates an empty run file, mode 0600, in dir.
func createRun(dir string, stop *atomic.Bool, written *atomic.Int64) (*runWriter, error) {
	f, err := os.CreateTemp(dir, "extsort-*.run")
	if err != nil {
		return nil, fmt.Errorf("extsort: create run file in %q: %w", dir, err)
	}
	w := &runWriter{f: f, name: f.Name(), stop: stop, written: written}
	if err := w.write([]byte(runMagic)); err != nil {
		w.discard()
		return nil, err
	}
	w.block = make([]byte, blockHeader, blockHeader+blockTarget+64)
	return w, nil
}

func (w *runWriter) write(p []byte) error {
	if w.stop.Load() {
		return fmt.Errorf("extsort: write run file %s: %w", w.name, ErrClosed)
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	w.written.Add(int64(n))
	if err != nil {
		return fmt.Errorf("extsort: write run file %s: %w", w.name, err)
	}
	return nil
}

// add appends one record.
func (w *runWriter) add(key, value []byte) error {
	w.block = binary.AppendUvarint(w.block, uint64(len(key)))
	w.block = binary.AppendUvarint(w.block, uint64(len(value)))
	w.block = append(w.block, key...)
	w.block = append(w.block, value...)
	w.records++
	if len(w.block)-blockHeader >= blockTarget {
		return w.flush()
	}
	return nil
}

func (w *runWriter) flush() error {
	payload := w.block[blockHeader:]
	if len(payload) == 0 {
		return nil
	}
	binary.LittleEndian.PutUint32(w.block[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(w.block[4:], crc32.Checksum(payload, castagnoli))
	err := w.write(w.block)
	w.block = w.block[:blockHeader]
	if cap(w.block) > 4*blockTarget {
		w.block = make([]byte, blockHeader, blockHeader+blockTarget+64) // after an oversized record
	}
	return err
}

// finish writes the last block and the trailer and closes the file. On
// error the file is removed.
func (w *runWriter) finish() (runFile, error) {
	err := w.flush()
	if err == nil {
		var t [trailerLen]byte
		binary.LittleEndian.PutUint64(t[blockHeader:], uint64(w.records))
		binary.LittleEndian.PutUint32(t[4:], crc32.Checksum(t[blockHeader:], castagnoli))
		err = w.write(t[:])
	}
	if err == nil {
		if err = w.f.Close(); err != nil {
			err = fmt.Errorf("extsort: close run file %s: %w", w.name, err)
		}
		w.f = nil
	}
	if err != nil {
		w.discard()
		return runFile{}, err
	}
	return runFile{name: w.name, size: w.size, records: w.records}, nil
}

// discard closes and removes the file, ignoring errors: it is used on the
// way out of a failure that is already being reported.
func (w *runWriter) discard() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	os.Remove(w.name)
}

// runReader reads one run file back. It is a source for the merge.
type runReader struct {
	f       *os.File
	name    string
	size    int64 // file size when opened
	off     int64 // file offset of the next unread byte
	block   []byte
	pos     int // next record in block
	records int64
	hdr     [trailerLen]byte
	// released is the file offset up to which the bytes read have been
	// released; -1 once release has failed (the file system cannot).
	released int64
}

// openRun opens a run file for reading. It is opened read-write only so
// that the reader can release what it has read (fallocate needs a
// writable descriptor); nothing writes through it.
func openRun(name string) (*runReader, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("extsort: open run file: %w", err)
	}
	r := &runReader{f: f, name: name}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("extsort: open run file %s: %w", name, err)
	}
	r.size = fi.Size()
	if err := r.read(r.hdr[:len(runMagic)]); err != nil {
		f.Close()
		return nil, err
	}
	if string(r.hdr[:len(runMagic)]) != runMagic {
		f.Close()
		return nil, r.corrupt(0, "not a run file (bad magic)")
	}
	return r, nil
}

func (r *runReader) corrupt(off int64, what string) error {
	return fmt.Errorf("extsort: run file %s: offset %d: %s: %w", r.name, off, what, ErrCorrupt)
}

// read fills p from the file; running out of file is corruption.
func (r *runReader) read(p []byte) error {
	n, err := io.ReadFull(r.f, p)
	r.off += int64(n)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return r.corrupt(r.off, "truncated")
	default:
		return fmt.Errorf("extsort: read run file %s: %w", r.name, err)
	}
}

// next returns the next record; io.EOF after the last one. The slices
// stay valid until the following call.
func (r *runReader) next() (key, value []byte, err error) {
	if r.pos >= len(r.block) {
		if err := r.readBlock(); err != nil {
			return nil, nil, err
		}
	}
	b := r.block[r.pos:]
	klen, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return nil, nil, r.corrupt(r.off, "bad record length in block")
	}
	vlen, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		return nil, nil, r.corrupt(r.off, "bad record length in block")
	}
	rest := uint64(len(b) - n1 - n2)
	if klen > rest || vlen > rest-klen {
		return nil, nil, r.corrupt(r.off, "record overruns its block")
	}
	ks := n1 + n2
	ke := ks + int(klen)
	ve := ke + int(vlen)
	r.pos += ve
	r.records++
	return b[ks:ke:ke], b[ke:ve:ve], nil
}

// readBlock loads and checks the next block; io.EOF after a valid trailer.
func (r *runReader) readBlock() error {
	if r.f == nil {
		return io.EOF
	}
	start := r.off
	r.releaseRead(start)
	h := r.hdr[:blockHeader]
	if err := r.read(h); err != nil {
		return err
	}
	length := binary.LittleEndian.Uint32(h)
	sum := binary.LittleEndian.Uint32(h[4:])
	if length == 0 {
		return r.trailer(start, sum)
	}
	if int64(length) > r.size-r.off {
		return r.corrupt(start, fmt.Sprintf("block length %d runs past the end of the file", length))
	}
	if cap(r.block) < int(length) {
		r.block = make([]byte, max(int(length), blockTarget+64))
	}
	r.block = r.block[:length]
	r.pos = 0
	if err := r.read(r.block); err != nil {
		return err
	}
	if crc32.Checksum(r.block, castagnoli) != sum {
		return r.corrupt(start, "block checksum mismatch")
	}
	return nil
}

// releaseRead frees the file's bytes before off, every releaseStep: a
// run file is read once, front to back, so what a merge has read is never
// read again. The run's pages and disk blocks go back as the merge
// proceeds instead of all at the sorter's Close: the scratch folder then
// holds about one sort's worth of runs, not the runs of every sort of a
// period at once, and the page cache reuses the pages just freed for the
// next sort's runs and the period's files.
func (r *runReader) releaseRead(off int64) {
	end := off &^ (releaseStep - 1)
	if r.released < 0 || end-r.released < releaseStep {
		return
	}
	if !release(r.f, r.released, end-r.released) {
		r.released = -1
		return
	}
	r.released = end
}

func (r *runReader) trailer(start int64, sum uint32) error {
	c := r.hdr[blockHeader:trailerLen]
	if err := r.read(c); err != nil {
		return err
	}
	if crc32.Checksum(c, castagnoli) != sum {
		return r.corrupt(start, "trailer checksum mismatch")
	}
	if n := binary.LittleEndian.Uint64(c); n != uint64(r.records) {
		return r.corrupt(start, fmt.Sprintf("trailer counts %d records, read %d", n, r.records))
	}
	if r.off != r.size {
		return r.corrupt(r.off, "data after the trailer")
	}
	var one [1]byte
	if n, _ := r.f.Read(one[:]); n != 0 {
		return r.corrupt(r.off, "data after the trailer")
	}
	r.close()
	return io.EOF
}

func (r *runReader) close() error {
	r.block = nil
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	if err != nil {
		return fmt.Errorf("extsort: close run file %s: %w", r.name, err)
	}
	return nil
}

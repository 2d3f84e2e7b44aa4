// Package encode writes a period's files: the summary, transactions and
// adjustments datasets as Parquet, each agency's files as CSV and/or
// Parquet, and the rejects file, each into a temp file whose name in the
// sink carries the first 16 hex digits of its SHA-256
// (summary/period=P/summary-0123456789abcdef.parquet). The same rows
// always give the same bytes, hence the same names: a rebuild of an
// unchanged period produces the objects it already delivered.
package encode

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/reportjob/reportjob/internal/report"
)

// Content types of the objects.
const (
	TypeParquet = "application/vnd.apache.parquet"
	TypePDF     = "application/pdf"
	TypeCSV     = "text/csv; charset=utf-8"
	TypeJSONL   = "application/x-ndjson"
	TypeJSON    = "application/json"
)

// File is one encoded object, waiting for upload: in a temp file, or in
// memory when it is small and its encoder keeps small files there (a
// period's Writer).
type File struct {
	// Key is the object's key in the sink.
	Key string
	// Path is the temp file (the encoder's folder holds it); "" when the
	// content is Data.
	Path string
	// Data is the content when it is held in memory.
	Data        []byte
	ContentType string
	Bytes, Rows int64
	SHA256      string // hex
}

// Info returns the manifest's entry of f.
func (f File) Info() report.FileInfo {
	return report.FileInfo{Key: f.Key, Bytes: f.Bytes, Rows: f.Rows, SHA256: f.SHA256}
}

// Discard releases f once it is uploaded or abandoned: it removes the
// temp file, or gives the memory back for the next file. f must not be
// used after.
func (f File) Discard() {
	if f.Path != "" {
		_ = os.Remove(f.Path)
	}
	if f.Data != nil {
		b := f.Data[:0]
		memPool.Put(&b)
	}
}

// SmallFileBytes is the most a period's Writer holds in memory for one
// file: a file that grows past it goes to a temp file. Holding the many
// small files of a period (an agency's CSV) in memory saves each a file's
// creation, write, reopening and removal; the uploads queue is bounded
// (publish.Session takes report.concurrency at a time), so at most a few
// of them are held at once.
const SmallFileBytes = 2 << 20

// memPool recycles the memory of small files.
var memPool = sync.Pool{New: func() any { return new([]byte) }}

// tempFile is a file being encoded: counted and hashed as it is written.
// A memory file (memLimit > 0) stays in mem until it outgrows memLimit;
// then, as a file from the start, in f.
type tempFile struct {
	dir      string
	memLimit int
	mem      []byte
	f        *os.File
	bw       *bufio.Writer
	h        hash.Hash
	n        int64
}

// bufPool recycles the temp files' write buffers: a period writes one
// file per agency and format, most of them small.
var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func newTempFile(dir string) (*tempFile, error) {
	t := &tempFile{dir: dir, h: sha256.New()}
	if err := t.create(); err != nil {
		return nil, err
	}
	return t, nil
}

// newMemFile is a tempFile held in memory up to memLimit bytes.
func newMemFile(dir string, memLimit int) *tempFile {
	mem := memPool.Get().(*[]byte)
	return &tempFile{dir: dir, memLimit: memLimit, mem: (*mem)[:0], h: sha256.New()}
}

// create makes t's temp file, with what t held in memory.
func (t *tempFile) create() error {
	f, err := os.CreateTemp(t.dir, "enc-*")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(f)
	t.f, t.bw = f, bw
	if t.mem != nil {
		_, err := bw.Write(t.mem)
		t.releaseMem()
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	}
	return nil
}

// releaseMem gives t's memory back.
func (t *tempFile) releaseMem() {
	if t.mem != nil {
		b := t.mem[:0]
		memPool.Put(&b)
		t.mem = nil
	}
}

// release returns the write buffer to the pool.
func (t *tempFile) release() {
	if t.bw != nil {
		t.bw.Reset(nil)
		bufPool.Put(t.bw)
		t.bw = nil
	}
}

func (t *tempFile) Write(p []byte) (int, error) {
	if t.f == nil {
		if len(t.mem)+len(p) <= t.memLimit {
			t.mem = append(t.mem, p...)
			t.h.Write(p)
			t.n += int64(len(p))
			return len(p), nil
		}
		if err := t.create(); err != nil {
			return 0, err
		}
	}
	n, err := t.bw.Write(p)
	t.h.Write(p[:n])
	t.n += int64(n)
	return n, err
}

// finish closes the file and returns it as the object
// prefix+base-H.ext.
func (t *tempFile) finish(prefix, base, ext, contentType string, rows int64) (File, error) {
	if t.f == nil {
		var sum [32]byte
		t.h.Sum(sum[:0])
		data := t.mem
		t.mem = nil
		return File{
			Key: prefix + report.HashedName(base, ext, sum), Data: data, ContentType: contentType,
			Bytes: t.n, Rows: rows, SHA256: hex.EncodeToString(sum[:]),
		}, nil
	}
	err := t.bw.Flush()
	t.release()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(t.f.Name())
		return File{}, fmt.Errorf("encode %s%s: %w", prefix, base, err)
	}
	var sum [32]byte
	t.h.Sum(sum[:0])
	return File{
		Key: prefix + report.HashedName(base, ext, sum), Path: t.f.Name(), ContentType: contentType,
		Bytes: t.n, Rows: rows, SHA256: hex.EncodeToString(sum[:]),
	}, nil
}

// discard closes and removes the file.
func (t *tempFile) discard() {
	if t == nil {
		return
	}
	t.releaseMem()
	if t.f != nil {
		t.release()
		t.f.Close()
		os.Remove(t.f.Name())
	}
}

// encodeFile writes one whole file with enc, held in memory up to
// memLimit bytes (0: a temp file from the start).
func encodeFile(dir string, memLimit int, prefix, base, ext, contentType string, rows int64, enc func(io.Writer) error) (File, error) {
	var t *tempFile
	if memLimit > 0 {
		t = newMemFile(dir, memLimit)
	} else {
		var err error
		if t, err = newTempFile(dir); err != nil {
			return File{}, err
		}
	}
	if err := enc(t); err != nil {
		t.discard()
		return File{}, err
	}
	return t.finish(prefix, base, ext, contentType, rows)
}

// hashFile makes an existing file (the rejects, joined by collect) an
// object prefix+base-H.ext. The file stays where it is.
func hashFile(path, prefix, base, ext, contentType string, rows int64) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("encode %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, fmt.Errorf("encode %s: %w", path, err)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return File{
		Key: prefix + report.HashedName(base, ext, sum), Path: path, ContentType: contentType,
		Bytes: n, Rows: rows, SHA256: hex.EncodeToString(sum[:]),
	}, nil
}

// ErrClosed is returned by a Writer's methods after Close.
var ErrClosed = errors.New("encode: writer closed")

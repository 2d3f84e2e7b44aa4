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

// File is one encoded object in a temp file, waiting for upload.
type File struct {
	// Key is the object's key in the sink.
	Key string
	// Path is the temp file; the encoder's folder holds it.
	Path        string
	ContentType string
	Bytes, Rows int64
	SHA256      string // hex
}

// Info returns the manifest's entry of f.
func (f File) Info() report.FileInfo {
	return report.FileInfo{Key: f.Key, Bytes: f.Bytes, Rows: f.Rows, SHA256: f.SHA256}
}

// tempFile is a file being encoded: counted and hashed as it is written.
type tempFile struct {
	f  *os.File
	bw *bufio.Writer
	h  hash.Hash
	n  int64
}

// bufPool recycles the temp files' write buffers: a period writes one
// file per agency and format, most of them small.
var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func newTempFile(dir string) (*tempFile, error) {
	f, err := os.CreateTemp(dir, "enc-*")
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(f)
	return &tempFile{f: f, bw: bw, h: sha256.New()}, nil
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
	n, err := t.bw.Write(p)
	t.h.Write(p[:n])
	t.n += int64(n)
	return n, err
}

// finish closes the file and returns it as the object
// prefix+base-H.ext.
func (t *tempFile) finish(prefix, base, ext, contentType string, rows int64) (File, error) {
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
	t.f.Close()
	os.Remove(t.f.Name())
}

// encodeFile writes one whole file with enc.
func encodeFile(dir, prefix, base, ext, contentType string, rows int64, enc func(io.Writer) error) (File, error) {
	t, err := newTempFile(dir)
	if err != nil {
		return File{}, err
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

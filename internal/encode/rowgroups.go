package encode

import (
	"bytes"
	"fmt"
	"io"
	"runtime"

	"github.com/parquet-go/parquet-go"
)

// A period's transactions file is encoded one row group per goroutine.
//
// parquet-go encodes a file's rows on the goroutine that writes them:
// column buffers, page statistics and compression, about 1.4 s of CPU per
// million rows, one serial chain. A row group's bytes depend only on its
// own rows and on how they were handed to parquet-go (batches of
// lineItemBatch rows; lineItemRowGroupRows is a multiple of it): nothing
// carries over from one row group to the next. So each row group is
// encoded by its own parquet-go writer into a one-row-group file in
// memory, and the row groups are copied into the period's file in order
// with WriteRowGroup, which moves a row group of a file written with the
// same options byte for byte (its compressed pages, statistics and page
// index: parquet-go's copy path). The file is the one a single writer
// makes, byte for byte (TestRowGroupsSameBytes): a period keeps its bytes
// whichever way it is built.

// rowGroupEncoders returns how many row groups of a transactions file are
// encoded at once: one per core, at most 4 (each holds a row group's
// pages, a few MiB).
func rowGroupEncoders() int { return min(runtime.GOMAXPROCS(0), 4) }

// rowGroupWriter writes a transactions file whose row groups are encoded
// by goroutines of their own and copied into out in order. Its methods are
// called by one goroutine; write and close return the first error, and the
// output must then be discarded. abort stops its goroutines without
// writing.
type rowGroupWriter struct {
	out  *parquet.GenericWriter[lineItemRecord]
	opts []parquet.WriterOption
	max  int
	// inflight holds the row groups being encoded, in file order; cur,
	// when not nil, is the last of them and is still being filled.
	inflight []*rowGroupJob
	cur      *rowGroupJob
	idle     []*rowGroupEncoder
	// spare holds the batches given back by the encoders.
	spare chan []lineItemRecord
	err   error
}

// rowGroupEncoder is a parquet-go writer and the buffer it writes its
// one-row-group file to, reused from one row group to the next.
type rowGroupEncoder struct {
	pw  *parquet.GenericWriter[lineItemRecord]
	buf bytes.Buffer
}

// rowGroupJob is one row group being encoded: its batches arrive on
// batches (buffered for a whole row group, so the caller never waits for
// the encoder), and done receives the outcome once the encoder's file is
// complete.
type rowGroupJob struct {
	enc     *rowGroupEncoder
	batches chan []lineItemRecord
	done    chan error
	rows    int
}

// batchesPerRowGroup is how many full batches make a row group.
const batchesPerRowGroup = lineItemRowGroupRows / lineItemBatch

// A row group is a whole number of batches (this fails to compile
// otherwise): a batch spanning two row groups would split differently in
// a one-row-group file.
var _ [0]struct{} = [lineItemRowGroupRows % lineItemBatch]struct{}{}

func newRowGroupWriter(w io.Writer, opts []parquet.WriterOption) *rowGroupWriter {
	n := rowGroupEncoders()
	return &rowGroupWriter{
		out:   parquet.NewGenericWriter[lineItemRecord](w, opts...),
		opts:  opts,
		max:   n,
		spare: make(chan []lineItemRecord, n*4),
	}
}

// batch returns an empty batch to fill: one an encoder gave back, or a new
// one.
func (rw *rowGroupWriter) batch() []lineItemRecord {
	select {
	case b := <-rw.spare:
		return b
	default:
		return make([]lineItemRecord, 0, lineItemBatch)
	}
}

// write hands b to the encoder of the current row group; b belongs to the
// encoder from then on. Every batch but the file's last must hold
// lineItemBatch rows.
func (rw *rowGroupWriter) write(b []lineItemRecord) error {
	if rw.err != nil {
		return rw.err
	}
	if rw.cur == nil {
		if err := rw.start(); err != nil {
			return err
		}
	}
	rw.cur.rows += len(b)
	rw.cur.batches <- b
	if rw.cur.rows >= lineItemRowGroupRows {
		close(rw.cur.batches)
		rw.cur = nil
	}
	return nil
}

// start begins a row group: once as many are in flight as there are
// encoders, the oldest is waited for and copied into the file first.
func (rw *rowGroupWriter) start() error {
	if len(rw.inflight) == rw.max {
		if err := rw.commitOldest(); err != nil {
			return err
		}
	}
	var enc *rowGroupEncoder
	if n := len(rw.idle); n > 0 {
		enc, rw.idle = rw.idle[n-1], rw.idle[:n-1]
		enc.buf.Reset()
		enc.pw.Reset(&enc.buf)
	} else {
		enc = &rowGroupEncoder{}
		enc.pw = parquet.NewGenericWriter[lineItemRecord](&enc.buf, rw.opts...)
	}
	j := &rowGroupJob{
		enc:     enc,
		batches: make(chan []lineItemRecord, batchesPerRowGroup+1),
		done:    make(chan error, 1),
	}
	rw.inflight = append(rw.inflight, j)
	rw.cur = j
	go j.run(rw.spare)
	return nil
}

// run encodes the job's batches and closes its file. It gives each batch
// back to spare, emptied (no string kept alive), when there is room.
func (j *rowGroupJob) run(spare chan<- []lineItemRecord) {
	var err error
	for b := range j.batches {
		if err == nil {
			_, err = j.enc.pw.Write(b)
		}
		clear(b)
		select {
		case spare <- b[:0]:
		default:
		}
	}
	if err == nil {
		err = j.enc.pw.Close()
	}
	j.done <- err
}

// commitOldest waits for the oldest row group in flight and copies it
// into the file.
func (rw *rowGroupWriter) commitOldest() error {
	j := rw.inflight[0]
	rw.inflight = rw.inflight[1:]
	if j == rw.cur {
		close(j.batches)
		rw.cur = nil
	}
	if err := <-j.done; err != nil {
		rw.err = fmt.Errorf("encode row group: %w", err)
		rw.abort()
		return rw.err
	}
	b := j.enc.buf.Bytes()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err == nil {
		for _, g := range f.RowGroups() {
			if _, err = rw.out.WriteRowGroup(g); err != nil {
				break
			}
		}
	}
	if err != nil {
		rw.err = fmt.Errorf("copy row group: %w", err)
		rw.abort()
		return rw.err
	}
	rw.idle = append(rw.idle, j.enc)
	return nil
}

// close copies the row groups still in flight and writes the footer.
func (rw *rowGroupWriter) close() error {
	for len(rw.inflight) > 0 {
		if err := rw.commitOldest(); err != nil {
			return err
		}
	}
	if rw.err != nil {
		return rw.err
	}
	if err := rw.out.Close(); err != nil {
		rw.err = fmt.Errorf("close: %w", err)
		return rw.err
	}
	return nil
}

// abort stops the encoders without writing more: each finishes the
// batches it was given and exits. It is called on every error, so a
// failed writer leaves no goroutine waiting.
func (rw *rowGroupWriter) abort() {
	if rw.cur != nil {
		close(rw.cur.batches)
		rw.cur = nil
	}
	rw.inflight = nil
}

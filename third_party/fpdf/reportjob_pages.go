package fpdf

// [reportjob patch] Page content buffers, reused.
//
// A page's content grows in its own bytes.Buffer, by doubling, until
// putpages writes it out (compressed or not): most of what a statement
// allocated (a 720-period appendix page is about a megabyte of
// operators). Once putpages has written a page, nothing reads its buffer
// again (after Close the document writes to its own buffer, and a closed
// document's methods are not to be called), so putpages hands it to
// pageBuffers and leaves nil in its place, and AddPage takes an empty one
// from there. A buffer is empty when a page gets it: the same bytes.

import (
	"bytes"
	"sync"
)

// maxPooledPage is the largest buffer kept for another page (a
// statement's pages hold up to about 120 KB), maxPooledDoc the largest
// document buffer kept: what the pools hold stays about that much per
// page and document being written at a time (and a pool is emptied by
// the garbage collector when unused).
const (
	maxPooledPage = 256 << 10
	maxPooledDoc  = 1 << 20
)

var pageBuffers = sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}

// newPageBuffer is an empty buffer for a new page's content.
func newPageBuffer() *bytes.Buffer {
	b := pageBuffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// releasePage hands page n's buffer, written out, to the next page.
func (f *Fpdf) releasePage(n int) {
	b := f.pages[n]
	f.pages[n] = nil
	if b != nil && b.Cap() <= maxPooledPage {
		pageBuffers.Put(b)
	}
}

// The document buffer, reused.
//
// enddoc writes the whole document (pages compressed, fonts, objects)
// into f.buffer, which grew by doubling each time; Output then drains it
// into its writer. enddoc now moves what the buffer holds (the few lines
// written before the first page) to an array a document written before
// left in docBuffers, and Output, once it has written the document out,
// leaves the drained array there and f.buffer empty: a drained buffer is
// empty anyway (another Output writes nothing, as upstream's did). When
// Output's writer fails, the buffer is kept as it is.

var docBuffers = sync.Pool{New: func() interface{} { return new([]byte) }}

// takeDocBuffer moves f.buffer's bytes to a reused array.
func (f *Fpdf) takeDocBuffer() {
	p := docBuffers.Get().(*[]byte)
	f.buffer.Buffer = *bytes.NewBuffer(append((*p)[:0], f.buffer.Bytes()...))
}

// releaseDocBuffer hands f.buffer's array, drained, to the next document.
func (f *Fpdf) releaseDocBuffer() {
	if f.buffer.Len() != 0 {
		return
	}
	b := f.buffer.Bytes()[:0]
	f.buffer.Buffer = bytes.Buffer{}
	if cap(b) > 0 && cap(b) <= maxPooledDoc {
		docBuffers.Put(&b)
	}
}

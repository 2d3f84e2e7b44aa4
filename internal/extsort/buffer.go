package extsort

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"sync"
)

// The in-memory buffer keeps records in an arena of chunks (1 MiB, or the
// buffer's limit if smaller), so that growing it never copies what it
// already holds, and indexes them with 16-byte entries. A record is stored
// as [vlen uint32 LE][key][value]; its entry holds the key length, the
// record's position and the first 8 bytes of the key as a big-endian
// integer, which orders most pairs without touching the arena.
const (
	chunkShift   = 20
	chunkSize    = 1 << chunkShift
	chunkMask    = chunkSize - 1
	minChunkSize = 4 << 10
	recHeader    = 4 // vlen uint32 LE
	entrySize    = 16

	// maxBufferBytes bounds one buffer so that positions fit the 32 bits of
	// an entry: chunk index (12 bits) and offset in the chunk (20 bits). A
	// buffer is full once its chunks, counted whole, reach its limit, so it
	// has at most limit/chunk + 1 chunks: 2049 at this bound.
	maxBufferBytes = 1 << 31
)

// entry indexes one record of a buffer.
type entry struct {
	prefix uint64 // first 8 key bytes, big-endian, zero-padded (deeper ones while sorting)
	pos    uint32 // chunk<<chunkShift | offset in the chunk
	klen   uint32
}

// buffer holds records in memory until they are sorted and either spilled
// or served by a memSource. It is not safe for concurrent use.
type buffer struct {
	chunks [][]byte // chunks[:ci+1] are in use; later ones are kept for reuse
	ci     int      // chunk being filled, -1 when empty
	index  []entry
	arena  int // arena bytes consumed, including the unused tails of chunks
	limit  int // bytes (arena + index) at which the buffer is full
	chunk  int // capacity of a chunk, at most chunkSize
	par    *parallel
}

// parallel lets a sort hand buckets to other goroutines.
type parallel struct {
	sem chan struct{} // one token a goroutine besides the caller's
	wg  sync.WaitGroup
}

func newBuffer(limit int) *buffer {
	return &buffer{ci: -1, limit: limit, chunk: min(max(limit, minChunkSize), chunkSize)}
}

// add copies key and value into the buffer. The caller has checked that
// the record is no larger than maxRecordBytes.
func (b *buffer) add(key, value []byte) {
	n := recHeader + len(key) + len(value)
	if b.ci < 0 || cap(b.chunks[b.ci])-len(b.chunks[b.ci]) < n {
		b.nextChunk(n)
	}
	c := b.chunks[b.ci]
	off := len(c)
	c = binary.LittleEndian.AppendUint32(c, uint32(len(value)))
	c = append(c, key...)
	c = append(c, value...)
	b.chunks[b.ci] = c
	b.arena += n
	b.index = append(b.index, entry{
		prefix: keyPrefix(key),
		pos:    uint32(b.ci<<chunkShift | off),
		klen:   uint32(len(key)),
	})
}

// nextChunk starts a chunk able to hold a record of n bytes. A record
// larger than a chunk gets a chunk of its own, exactly its size, so that no
// other record follows it there (the offset in a chunk must stay below
// chunkSize).
func (b *buffer) nextChunk(n int) {
	if b.ci >= 0 {
		c := b.chunks[b.ci]
		b.arena += cap(c) - len(c) // the unused tail counts against the budget
	}
	b.ci++
	if b.ci == len(b.chunks) {
		b.chunks = append(b.chunks, nil)
	}
	c := b.chunks[b.ci]
	if n > b.chunk {
		c = make([]byte, 0, n)
	} else if cap(c) != b.chunk {
		c = make([]byte, 0, b.chunk)
	}
	b.chunks[b.ci] = c[:0]
}

// bytes is what the buffer counts against its limit.
func (b *buffer) bytes() int { return b.arena + entrySize*len(b.index) }

func (b *buffer) full() bool { return b.bytes() >= b.limit }

// reset empties the buffer, keeping its chunks and index for reuse, except
// chunks made for oversized records.
func (b *buffer) reset() {
	for i, c := range b.chunks {
		if cap(c) != b.chunk {
			b.chunks[i] = nil
		}
	}
	b.ci = -1
	b.arena = 0
	b.index = b.index[:0]
}

// record returns the key and value of e; their capacity is their length,
// so a caller's append cannot overwrite the next record.
func (b *buffer) record(e entry) (key, value []byte) {
	c := b.chunks[e.pos>>chunkShift]
	off := int(e.pos & chunkMask)
	vlen := int(binary.LittleEndian.Uint32(c[off:]))
	ks := off + recHeader
	ke := ks + int(e.klen)
	ve := ke + vlen
	return c[ks:ke:ke], c[ke:ve:ve]
}

func (b *buffer) key(e entry) []byte {
	off := int(e.pos&chunkMask) + recHeader
	return b.chunks[e.pos>>chunkShift][off : off+int(e.klen)]
}

func (b *buffer) compare(x, y entry) int {
	if x.prefix != y.prefix {
		return cmp.Compare(x.prefix, y.prefix)
	}
	if c := bytes.Compare(b.key(x), b.key(y)); c != 0 {
		return c
	}
	_, vx := b.record(x)
	_, vy := b.record(y)
	return bytes.Compare(vx, vy)
}

// minParallelSort is the least number of records of a bucket that a sort
// hands to another goroutine.
const minParallelSort = 1 << 14

// sort orders the index by key, then value, with up to workers goroutines.
func (b *buffer) sort(workers int) {
	if workers > 1 && len(b.index) >= 2*minParallelSort {
		b.par = &parallel{sem: make(chan struct{}, workers-1)}
		defer func() { b.par = nil }()
		defer b.par.wg.Wait()
	}
	b.radixSort(b.index)
}

// keyPrefix returns the first 8 bytes of key as a big-endian integer,
// zero-padded. If keyPrefix(a) < keyPrefix(b) then bytes.Compare(a, b) < 0:
// the padding only ever stands where the shorter key has ended.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var p uint64
	for i, c := range key {
		p |= uint64(c) << (56 - 8*i)
	}
	return p
}

package extsort

import (
	"encoding/binary"
	"fmt"
)

// Batch gathers records that one goroutine hands to a sorter in a single
// AddBatch call: the sorter's lock is taken once a batch instead of once a
// record, and the records' index entries are made outside it. Its memory
// is the caller's, on top of the sorter's budget: keep batches small (a
// page of a query, not a partition). The zero Batch is empty and ready to
// use; a Batch is not safe for concurrent use.
type Batch struct {
	recs    []byte       // records as a buffer stores them: [vlen uint32 LE][key][value]
	entries []batchEntry // one a record, in the order added
}

// batchEntry is where a record is in Batch.recs.
type batchEntry struct {
	prefix uint64 // keyPrefix of the key
	off    int    // offset of the record's header in recs
	klen   uint32
	size   uint32 // recHeader + key + value
}

// Add copies key and value into b. A record over MaxRecordBytes is
// refused with ErrTooLarge, as Sorter.Add does, and b is left as it was.
func (b *Batch) Add(key, value []byte) error {
	if n := len(key) + len(value); n > MaxRecordBytes {
		return fmt.Errorf("extsort: add: record of %d bytes (key %d, value %d) over the %d-byte limit: %w",
			n, len(key), len(value), MaxRecordBytes, ErrTooLarge)
	}
	off := len(b.recs)
	b.recs = binary.LittleEndian.AppendUint32(b.recs, uint32(len(value)))
	b.recs = append(b.recs, key...)
	b.recs = append(b.recs, value...)
	b.entries = append(b.entries, batchEntry{
		prefix: keyPrefix(key),
		off:    off,
		klen:   uint32(len(key)),
		size:   uint32(len(b.recs) - off),
	})
	return nil
}

// Len is the number of records in b.
func (b *Batch) Len() int { return len(b.entries) }

// Reset empties b, keeping its memory for the next records.
func (b *Batch) Reset() {
	b.recs = b.recs[:0]
	b.entries = b.entries[:0]
}

// AddBatch adds every record of b, in one hold of the sorter's lock, and
// empties b. It is Add of each record in turn, with Add's errors: the
// sorted records are the same whatever the batches, and a buffer that
// fills in the middle of a batch is handed to a background spill there.
// When it returns ErrClosed or ErrSorted, or the error of an earlier
// spill, no record of b was added; when a spill fails during the call,
// the records before that point were, and the sorter has lost records
// (the error is sticky, as with Add).
func (s *Sorter) AddBatch(b *Batch) error {
	defer b.Reset()
	if len(b.entries) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addableLocked(); err != nil {
		return err
	}
	for i, e := range b.entries {
		s.cur.addEncoded(b.recs[e.off:e.off+int(e.size)], e.klen, e.prefix)
		if !s.cur.full() {
			continue
		}
		if err := s.spillLocked(); err != nil {
			s.records.Add(int64(i + 1))
			return err
		}
	}
	s.records.Add(int64(len(b.entries)))
	return nil
}

// addEncoded adds a record already in the buffer's format (rec, whose key
// is klen bytes with keyPrefix prefix) with one copy.
func (b *buffer) addEncoded(rec []byte, klen uint32, prefix uint64) {
	n := len(rec)
	if b.ci < 0 || cap(b.chunks[b.ci])-len(b.chunks[b.ci]) < n {
		b.nextChunk(n)
	}
	c := b.chunks[b.ci]
	off := len(c)
	b.chunks[b.ci] = append(c, rec...)
	b.arena += n
	b.index = append(b.index, entry{prefix: prefix, pos: uint32(b.ci<<chunkShift | off), klen: klen})
}

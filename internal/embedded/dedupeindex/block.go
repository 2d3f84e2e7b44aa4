package dedupeindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

// A merged run is packed: its bucket periods/<job>/merged/<seq> maps the
// last id of each block to the block, a run of entries sorted by id, then
// by period start descending. The entries of one id are never split
// between blocks, so the block whose key is the first at or after an id
// holds all of that id's entries (Seek, then a binary search in it).
//
// Block layout: version 1, the entry count (uvarint), then the entries:
// the length of the prefix shared with the previous entry's id (uvarint),
// the rest of the id (uvarint length, bytes), the period start (8 bytes,
// sortable), the generation (uvarint), the period's length in ms plus one
// (uvarint; 0: a version 1 claim, no end), the expiry as seconds after the
// period start (varint), the fingerprint.
const blockVersion = 1

// blockEntries is how many entries a block holds (more when the last id
// has several).
var blockEntries = 128

// entry is a claim in a merged run: id's claim value c, written by
// generation gen of its period (c.period). It counts only while gen is
// that period's committed head (see validity).
type entry struct {
	id  []byte
	gen uint64
	c   claimValue
}

// cmpEntry orders entries as a run holds them: by id, then latest period
// first.
func cmpEntry(a, b *entry) int {
	if c := bytes.Compare(a.id, b.id); c != 0 {
		return c
	}
	switch {
	case a.c.period > b.c.period:
		return -1
	case a.c.period < b.c.period:
		return 1
	}
	return 0
}

var errCorruptBlock = errors.New("corrupt merged run block")

func encodeBlock(dst []byte, es []entry) []byte {
	dst = append(dst, blockVersion)
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	var prev []byte
	for i := range es {
		e := &es[i]
		n := 0
		for n < len(prev) && n < len(e.id) && prev[n] == e.id[n] {
			n++
		}
		dst = binary.AppendUvarint(dst, uint64(n))
		dst = binary.AppendUvarint(dst, uint64(len(e.id)-n))
		dst = append(dst, e.id[n:]...)
		dst = append(dst, sortable(e.c.period)...)
		dst = binary.AppendUvarint(dst, e.gen)
		var length uint64
		if e.c.end != 0 {
			length = uint64(e.c.end-e.c.period) + 1
		}
		dst = binary.AppendUvarint(dst, length)
		dst = binary.AppendVarint(dst, e.c.expires-e.c.period/1000)
		dst = append(dst, e.c.fp[:]...)
		prev = e.id
	}
	return dst
}

// decodeBlock appends the entries of block b to es. Their ids are new
// slices (b may be a page of the mapped file).
func decodeBlock(es []entry, b []byte) ([]entry, error) {
	err := scanBlock(b, func(e *entry) {
		es = append(es, *e)
		es[len(es)-1].id = bytes.Clone(e.id)
	})
	return es, err
}

// scanBlock checks block b and calls fn with each of its entries in
// order; the entry's id is a buffer reused for the next one.
func scanBlock(b []byte, fn func(e *entry)) error {
	if len(b) == 0 || b[0] != blockVersion {
		return errCorruptBlock
	}
	b = b[1:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return errCorruptBlock
	}
	b = b[n:]
	var id []byte
	for range count {
		shared, n1 := binary.Uvarint(b)
		if n1 <= 0 || shared > uint64(len(id)) {
			return errCorruptBlock
		}
		b = b[n1:]
		rest, n2 := binary.Uvarint(b)
		if n2 <= 0 || rest > uint64(len(b)-n2) {
			return errCorruptBlock
		}
		b = b[n2:]
		id = append(id[:shared], b[:rest]...)
		b = b[rest:]
		if len(b) < 8 {
			return errCorruptBlock
		}
		e := entry{id: id}
		e.c.period = unsortable(b[:8])
		b = b[8:]
		var n3, n4, n5 int
		e.gen, n3 = binary.Uvarint(b)
		if n3 <= 0 {
			return errCorruptBlock
		}
		b = b[n3:]
		length, n4 := binary.Uvarint(b)
		if n4 <= 0 {
			return errCorruptBlock
		}
		b = b[n4:]
		if length != 0 {
			e.c.end = e.c.period + int64(length-1)
		}
		var exp int64
		exp, n5 = binary.Varint(b)
		if n5 <= 0 || len(b)-n5 < collect.FPLen {
			return errCorruptBlock
		}
		b = b[n5:]
		e.c.expires = e.c.period/1000 + exp
		copy(e.c.fp[:], b)
		b = b[collect.FPLen:]
		fn(&e)
	}
	if len(b) != 0 {
		return errCorruptBlock
	}
	return nil
}

// runEntries returns the entries of id in the merged run b, latest period
// first (buf is reused). The block is checked whole; only id's entries
// are copied out of it.
func runEntries(b *bolt.Bucket, id []byte, buf []entry) ([]entry, error) {
	k, v := b.Cursor().Seek(id)
	if k == nil {
		return buf[:0], nil
	}
	es := buf[:0]
	err := scanBlock(v, func(e *entry) {
		if bytes.Equal(e.id, id) {
			es = append(es, *e)
			es[len(es)-1].id = bytes.Clone(e.id)
		}
	})
	if err != nil {
		return buf[:0], fmt.Errorf("block %q: %w", clip(string(k)), err)
	}
	return es, nil
}

// blockWriter packs entries, given in run order, into blocks of the
// bucket run (one put per block, pages packed full).
type blockWriter struct {
	run     *bolt.Bucket
	pending []entry
	buf     []byte
	count   uint64
}

// add appends e; a block is written once it is full and e starts a new id.
func (w *blockWriter) add(e entry) error {
	if len(w.pending) >= blockEntries && !bytes.Equal(w.pending[len(w.pending)-1].id, e.id) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	w.pending = append(w.pending, e)
	w.count++
	return nil
}

// flush writes the entries pending as one block.
func (w *blockWriter) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	w.run.FillPercent = 1
	w.buf = encodeBlock(w.buf[:0], w.pending)
	last := w.pending[len(w.pending)-1].id
	// bbolt keeps key and value until the transaction ends.
	if err := w.run.Put(bytes.Clone(last), bytes.Clone(w.buf)); err != nil {
		return fmt.Errorf("block %q: %w", clip(string(last)), err)
	}
	w.pending = w.pending[:0]
	return nil
}

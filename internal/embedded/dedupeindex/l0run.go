package dedupeindex

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Reading a list generation of either layout (l0block.go), within one
// transaction.

// listReader returns the claims of ids of one list generation. Ids asked
// in ascending order (as Lookup and a writer's batches ask) read each
// block of a packed list once.
type listReader struct {
	run    *bolt.Bucket
	packed bool
	start  int64 // the list's period start (ms)
	c      *bolt.Cursor
	// Packed: the block loaded holds every id of the list in [lo, key];
	// none is at or after lo when end is set.
	loaded, end bool
	lo, key     []byte
	blk         l0Block
}

func newListReader(run *bolt.Bucket, start int64) (*listReader, error) {
	packed, err := packedList(run)
	if err != nil {
		return nil, err
	}
	return &listReader{run: run, packed: packed, start: start}, nil
}

// get returns the claim value of id in the list; ok is false when the
// list has none (id not listed, or listed without).
func (r *listReader) get(id []byte) (c claimValue, ok bool, err error) {
	if !r.packed {
		v := r.run.Get(id)
		if len(v) == 0 {
			return c, false, nil
		}
		if c, err = decodeClaim(v); err != nil {
			return c, false, fmt.Errorf("claim of %q: %w", clip(string(id)), err)
		}
		return c, true, nil
	}
	if !r.loaded || bytes.Compare(id, r.lo) < 0 || (!r.end && bytes.Compare(id, r.key) > 0) {
		if r.c == nil {
			r.c = r.run.Cursor()
		}
		k, v := r.c.Seek(id)
		r.loaded, r.lo = true, append(r.lo[:0], id...)
		if r.end = k == nil; r.end {
			return c, false, nil
		}
		if r.blk, err = openL0Block(v); err != nil {
			return c, false, fmt.Errorf("list block %q: %w", clip(string(k)), err)
		}
		r.key = k
	}
	if r.end {
		return c, false, nil
	}
	i, err := r.blk.search(id)
	if err != nil || i == r.blk.n {
		return c, false, r.blockErr(err)
	}
	e, rest, err := r.blk.entry(i)
	if err != nil || !bytes.Equal(e, id) {
		return c, false, r.blockErr(err)
	}
	c, ok, err = claimOf(rest, r.start)
	return c, ok, r.blockErr(err)
}

func (r *listReader) blockErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("list block %q: %w", clip(string(r.key)), err)
}

// listCursor walks the ids of a list generation (either layout) in
// ascending order. After a move, ok reports whether it is at an id; a
// corrupt list stops it with err set.
type listCursor struct {
	c      *bolt.Cursor
	packed bool
	start  int64
	// Packed: the block at the cursor and the entry in it.
	blk  l0Block
	i    int
	key  []byte
	id   []byte // the current id
	rest []byte // packed: its claim and what follows; per id: its value
	err  error
}

func newListCursor(run *bolt.Bucket, start int64) (*listCursor, error) {
	packed, err := packedList(run)
	if err != nil {
		return nil, err
	}
	return &listCursor{c: run.Cursor(), packed: packed, start: start}, nil
}

func (lc *listCursor) ok() bool { return lc.id != nil }

// first moves to the first id.
func (lc *listCursor) first() bool {
	k, v := lc.c.First()
	return lc.load(k, v, nil)
}

// seek moves to the first id at or after id.
func (lc *listCursor) seek(id []byte) bool {
	k, v := lc.c.Seek(id)
	return lc.load(k, v, id)
}

// next moves to the next id.
func (lc *listCursor) next() bool {
	if lc.id == nil {
		return false
	}
	if lc.packed && lc.i+1 < lc.blk.n {
		lc.i++
		return lc.at()
	}
	k, v := lc.c.Next()
	return lc.load(k, v, nil)
}

// load moves to the bucket key k (value v): a packed list's block, at its
// first id at or after from (nil: its first).
func (lc *listCursor) load(k, v, from []byte) bool {
	lc.id = nil
	if k == nil || lc.err != nil {
		return false
	}
	if !lc.packed {
		lc.id, lc.rest = k, v
		return true
	}
	lc.key = k
	if lc.blk, lc.err = openL0Block(v); lc.err != nil {
		lc.err = fmt.Errorf("list block %q: %w", clip(string(k)), lc.err)
		return false
	}
	lc.i = 0
	if from != nil {
		if lc.i, lc.err = lc.blk.search(from); lc.err != nil || lc.i == lc.blk.n {
			if lc.err == nil {
				lc.err = errCorruptL0Block // the key is the block's last id
			}
			lc.err = fmt.Errorf("list block %q: %w", clip(string(k)), lc.err)
			return false
		}
	}
	return lc.at()
}

func (lc *listCursor) at() bool {
	id, rest, err := lc.blk.entry(lc.i)
	if err != nil {
		lc.err = fmt.Errorf("list block %q: %w", clip(string(lc.key)), err)
		return false
	}
	lc.id, lc.rest = id, rest
	return true
}

// claim returns the claim value of the current id; ok is false when it
// has none.
func (lc *listCursor) claim() (c claimValue, ok bool, err error) {
	if !lc.packed {
		if len(lc.rest) == 0 {
			return c, false, nil
		}
		if c, err = decodeClaim(lc.rest); err != nil {
			return c, false, fmt.Errorf("claim of %q: %w", clip(string(lc.id)), err)
		}
		return c, true, nil
	}
	if c, ok, err = claimOf(lc.rest, lc.start); err != nil {
		return c, false, fmt.Errorf("list block %q: %w", clip(string(lc.key)), err)
	}
	return c, ok, nil
}

// hasClaim reports whether the current id has a claim value, without
// decoding it.
func (lc *listCursor) hasClaim() bool {
	if !lc.packed {
		return len(lc.rest) > 0
	}
	return len(lc.rest) > 0 && lc.rest[0] != 0
}

// packedFilter returns the filter of the n ids with a claim value in the
// packed list run (Commit counts them as its batches write them): one
// pass, without decoding the claims.
func packedFilter(run *bolt.Bucket, n int) ([]byte, error) {
	lc, err := newListCursor(run, 0)
	if err != nil {
		return nil, err
	}
	fb := newFilter(n)
	got := 0
	for ok := lc.first(); ok; ok = lc.next() {
		if lc.hasClaim() {
			fb.add(idHash(lc.id))
			got++
		}
	}
	if lc.err != nil {
		return nil, lc.err
	}
	if got != n {
		return nil, fmt.Errorf("list holds %d claims, its writer wrote %d", got, n)
	}
	return fb.bytes(), nil
}

// readPage appends to page up to periodIDsPage ids of list after after
// (from the first when nil), and reports whether more follow.
func readPage(list *bolt.Bucket, after []byte, page []string) ([]string, bool, error) {
	lc, err := newListCursor(list, 0)
	if err != nil {
		return page, false, err
	}
	ok := false
	if after == nil {
		ok = lc.first()
	} else if ok = lc.seek(after); ok && bytes.Equal(lc.id, after) {
		ok = lc.next()
	}
	for ; ok; ok = lc.next() {
		if len(page) == periodIDsPage {
			return page, true, nil
		}
		page = append(page, string(lc.id))
	}
	return page, false, lc.err
}

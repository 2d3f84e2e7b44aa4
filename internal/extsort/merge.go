package extsort

import (
	"bytes"
	"errors"
	"io"
)

// source is one sorted stream of records: a run file or the sorted
// in-memory buffer.
type source interface {
	// next returns the next record, or io.EOF after the last one. The
	// slices stay valid until the following call.
	next() (key, value []byte, err error)
	close() error
}

// memSource serves a sorted part of a buffer's index.
type memSource struct {
	b     *buffer
	index []entry
}

func (m *memSource) next() (key, value []byte, err error) {
	if len(m.index) == 0 {
		return nil, nil, io.EOF
	}
	key, value = m.b.record(m.index[0])
	m.index = m.index[1:]
	return key, value, nil
}

func (m *memSource) close() error {
	m.b, m.index = nil, nil
	return nil
}

// cursor is a source and its current record, with its key's prefix (see
// keyPrefix) to settle most comparisons without reading the keys.
type cursor struct {
	prefix     uint64
	key, value []byte
	src        source
}

func (c *cursor) set(key, value []byte) {
	c.prefix, c.key, c.value = keyPrefix(key), key, value
}

func less(a, b *cursor) bool {
	if a.prefix != b.prefix {
		return a.prefix < b.prefix
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.value, b.value) < 0
}

// merger merges sources with a tree of losers: a tournament among the
// sources' cursors where each inner node keeps the loser of the match
// played there, so that replacing the winner's record replays one path,
// log2(sources) comparisons. The winner's source is advanced on the
// following call to next, so that its slices stay valid until then.
type merger struct {
	cur     []cursor // one a source; src nil once it is exhausted
	tree    []int    // tree[0] the winner; tree[1:] the losers of the inner nodes
	started bool
	err     error
}

// newMerger reads the first record of every source. It closes every
// source when it fails.
func newMerger(srcs []source) (*merger, error) {
	m := &merger{cur: make([]cursor, len(srcs)), tree: make([]int, max(len(srcs), 1))}
	for i, s := range srcs {
		k, v, err := s.next()
		switch {
		case err == nil:
			m.cur[i].src = s
			m.cur[i].set(k, v)
		case errors.Is(err, io.EOF):
			s.close()
		default:
			for _, s := range srcs[i:] {
				s.close()
			}
			m.close()
			return nil, err
		}
	}
	if len(srcs) > 0 {
		m.tree[0] = m.build(1)
	}
	return m, nil
}

// build plays the matches of the subtree at node (leaves are nodes
// len(cur) and up) and returns its winner.
func (m *merger) build(node int) int {
	if node >= len(m.cur) {
		return node - len(m.cur)
	}
	l, r := m.build(2*node), m.build(2*node+1)
	if m.beats(r, l) {
		l, r = r, l
	}
	m.tree[node] = r
	return l
}

// beats reports whether cursor a comes before cursor b; an exhausted
// cursor comes after every other.
func (m *merger) beats(a, b int) bool {
	ca, cb := &m.cur[a], &m.cur[b]
	switch {
	case ca.src == nil:
		return false
	case cb.src == nil:
		return true
	}
	return less(ca, cb)
}

// next moves to the next record in order: false at the end or on error
// (m.err).
func (m *merger) next() bool {
	if m.err != nil || len(m.cur) == 0 {
		return false
	}
	w := m.tree[0]
	if m.started {
		c := &m.cur[w]
		k, v, err := c.src.next()
		switch {
		case err == nil:
			c.set(k, v)
		case errors.Is(err, io.EOF):
			err := c.src.close()
			*c = cursor{}
			if err != nil {
				m.err = err
				return false
			}
		default:
			m.err = err
			return false
		}
		for node := (w + len(m.cur)) / 2; node > 0; node /= 2 {
			if m.beats(m.tree[node], w) {
				m.tree[node], w = w, m.tree[node]
			}
		}
		m.tree[0] = w
	}
	m.started = true
	return m.cur[w].src != nil
}

func (m *merger) key() []byte   { return m.cur[m.tree[0]].key }
func (m *merger) value() []byte { return m.cur[m.tree[0]].value }

// close closes every source still open.
func (m *merger) close() error {
	var errs []error
	for _, c := range m.cur {
		if c.src != nil {
			errs = append(errs, c.src.close())
		}
	}
	m.cur = nil
	return errors.Join(errs...)
}

// Iterator walks the sorted records. It is not safe for concurrent use,
// and Sorter.Close must not run while Next does.
type Iterator struct {
	// One of mem (a sorter that never spilled) and m; both nil once the
	// iteration has ended or the sorter is closed.
	mem *memSource
	m   *merger
	err error
	key []byte
	val []byte
}

// Next advances to the next record. It returns false at the end, on error
// (see Err), and after the sorter is closed.
func (it *Iterator) Next() bool {
	switch {
	case it.mem != nil:
		if len(it.mem.index) > 0 {
			it.key, it.val = it.mem.b.record(it.mem.index[0])
			it.mem.index = it.mem.index[1:]
			return true
		}
		it.mem.close()
		it.mem = nil
	case it.m != nil:
		if it.m.next() {
			it.key, it.val = it.m.key(), it.m.value()
			return true
		}
		it.err = it.m.err
		if cerr := it.m.close(); it.err == nil {
			it.err = cerr
		}
		it.m = nil
	}
	it.key, it.val = nil, nil
	return false
}

// Key returns the current record's key, valid until the next call to Next
// or Close. The caller must not modify it.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current record's value, valid until the next call to
// Next or Close. The caller must not modify it.
func (it *Iterator) Value() []byte { return it.val }

// Err returns the error that ended the iteration, if any: a corrupt or
// truncated run file (wrapping ErrCorrupt), an I/O error, or ErrClosed if
// the sorter was closed before the end. The records returned before an
// error are correct, but not all of them: a run file cut at a block
// boundary shows only at its end. Check Err before trusting the output as
// complete.
func (it *Iterator) Err() error { return it.err }

// close ends the iteration on behalf of Sorter.Close.
func (it *Iterator) close() error {
	if it.mem == nil && it.m == nil {
		return nil // ended already
	}
	var err error
	if it.m != nil {
		err = it.m.close()
	}
	it.mem, it.m = nil, nil
	it.key, it.val = nil, nil
	it.err = ErrClosed
	return err
}

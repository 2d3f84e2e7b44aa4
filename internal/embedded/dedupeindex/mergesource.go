package dedupeindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// source reads one merge input in run order: a level-0 run (a list's
// generation, either layout: its ids with a claim value) or a merged
// run's blocks.
type source struct {
	c     *bolt.Cursor // merged
	l0    *listCursor  // level 0
	gen   uint64       // level 0: the generation
	block []entry      // merged: the rest of the current block
	cur   entry
	done  bool
}

// openSource opens input in at the first entry after last (nil: the
// first entry).
func openSource(lists, merged, metas *bolt.Bucket, in runRef, last *entry) (*source, error) {
	s := &source{}
	if in.key != nil {
		start, gen := unsortable(in.key[:8]), binary.BigEndian.Uint64(in.key[8:])
		run := nested(nested(lists, in.key[:8]), in.key[8:])
		if run == nil {
			return nil, fmt.Errorf("run of period %s generation %d is missing", formatTime(time.UnixMilli(start)), gen)
		}
		lc, err := newListCursor(run, start)
		if err != nil {
			return nil, fmt.Errorf("run of period %s generation %d: %w", formatTime(time.UnixMilli(start)), gen, err)
		}
		s.l0, s.gen = lc, gen
		if last == nil {
			lc.first()
		} else {
			lc.seek(last.id)
		}
		if err := s.loadL0(); err != nil {
			return nil, err
		}
	} else {
		run := nested(merged, in.seq)
		if run == nil || metas == nil || metas.Get(in.seq) == nil {
			return nil, fmt.Errorf("merged run %x is missing", in.seq)
		}
		s.c = run.Cursor()
		var k, v []byte
		if last == nil {
			k, v = s.c.First()
		} else {
			k, v = s.c.Seek(last.id)
		}
		if err := s.load(k, v); err != nil {
			return nil, err
		}
	}
	for !s.done && last != nil && cmpEntry(&s.cur, last) <= 0 {
		if err := s.advance(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// loadL0 makes the level-0 run's id at its cursor (or the next one with a
// claim value) current.
func (s *source) loadL0() error {
	lc := s.l0
	for lc.ok() && !lc.hasClaim() {
		lc.next()
	}
	if lc.err != nil {
		return lc.err
	}
	if !lc.ok() {
		s.done = true
		return nil
	}
	c, _, err := lc.claim()
	if err != nil {
		return err
	}
	s.cur = entry{id: bytes.Clone(lc.id), gen: s.gen, c: c}
	return nil
}

// load makes the first entry of the merged run's block at cursor
// position k, v current.
func (s *source) load(k, v []byte) error {
	if k == nil {
		s.done = true
		return nil
	}
	es, err := decodeBlock(s.block[:0], v)
	if err != nil {
		return fmt.Errorf("block %q: %w", clip(string(k)), err)
	}
	if len(es) == 0 {
		return errCorruptBlock
	}
	s.cur, s.block = es[0], es[1:]
	return nil
}

func (s *source) advance() error {
	if s.l0 != nil {
		s.l0.next()
		return s.loadL0()
	}
	if len(s.block) > 0 {
		s.cur, s.block = s.block[0], s.block[1:]
		return nil
	}
	k, v := s.c.Next()
	return s.load(k, v)
}

// minSource returns the source whose current entry comes first, nil when
// all are done. Two sources never hold the same id and period as valid
// entries (one head per period); an invalid twin is dropped either way.
func minSource(srcs []*source) (*source, error) {
	var best *source
	for _, s := range srcs {
		if s.done {
			continue
		}
		if best == nil || cmpEntry(&s.cur, &best.cur) < 0 ||
			(cmpEntry(&s.cur, &best.cur) == 0 && s.cur.gen > best.cur.gen) {
			best = s
		}
	}
	return best, nil
}

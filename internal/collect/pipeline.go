package collect

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/reportjob/reportjob/internal/item"
)

// recordIterator is the id-sorted records (*extsort.Iterator).
type recordIterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
}

// batch is up to MaxLookup consecutive groups of records. Once ready is
// closed, its candidates are decoded and their claims looked up (or err
// says why not).
type batch struct {
	entries []entry
	// arena holds the encoded record of each candidate (entry.rec) until
	// it is decoded.
	arena []byte
	ids   []string // the candidates' ids, for the lookup
	// strs makes the candidates' strings: a few allocations a batch, not
	// one a candidate. (What is kept longer than the batch is copied:
	// the sightings' ids.)
	strs   item.Strings
	ready  chan struct{}
	claims map[string]Claim
	err    error
}

// entry is one transaction id of the period: a candidate and the number
// of identical copies dropped, or the encoded copies of a conflict.
type entry struct {
	cand     candidate
	dups     int
	conflict []record
	// rec is where the candidate's record lies in the batch's arena:
	// key at [0, 1), value at [1, 2).
	rec [3]int
}

// record is one sort record (decodeRecord decodes it).
type record struct{ key, value []byte }

// grouper walks the id-sorted records in a goroutine of its own, groups
// the copies of each transaction id, and sends them in batches on out, in
// order. Each batch's candidates are decoded and their claims looked up in
// the background, at most `lookups` batches at once (and as many wait in
// out), so that the decoding runs on another core than the merge and the
// caller's work, and the index's latency (a BatchGetItem round trip on
// DynamoDB) overlaps both. Memory is bounded: a few batches of MaxLookup
// transactions.
type grouper struct {
	ctx   context.Context
	it    recordIterator
	index Index // nil: no lookups
	job   string
	sem   chan struct{}
	out   chan *batch
	// free takes the batches the caller is done with, for reuse.
	free chan *batch
	// err is what stopped the walk; read it after out is closed.
	err      error
	done     chan struct{}
	inflight sync.WaitGroup

	// The group of records of the current transaction id.
	group   []record // the records, in arena
	inGroup bool     // a group is open: groupID is its id
	groupID []byte
	groupFP [FPLen]byte
	mixed   bool // the group holds different contents
	arena   []byte
	cur     *batch
}

func startGrouper(ctx context.Context, it recordIterator, index Index, job string, lookups int) *grouper {
	g := &grouper{ctx: ctx, it: it, index: index, job: job, sem: make(chan struct{}, lookups),
		out: make(chan *batch, lookups), free: make(chan *batch, 2*lookups+2), done: make(chan struct{})}
	go g.walk()
	return g
}

// wait returns once the walk and every lookup have ended (cancel the
// grouper's context first to stop them early).
func (g *grouper) wait() {
	<-g.done
	g.inflight.Wait()
}

func (g *grouper) walk() {
	defer close(g.done)
	defer close(g.out)
	g.err = g.walkRecords()
}

func (g *grouper) walkRecords() error {
	for g.it.Next() {
		id, fp, ok := keyID(g.it.Key())
		if !ok {
			return fmt.Errorf("sort by transaction id: malformed key %q", g.it.Key())
		}
		if g.inGroup && !bytes.Equal(id, g.groupID) {
			if err := g.endGroup(); err != nil {
				return err
			}
		}
		if !g.inGroup {
			// groupID's memory is reused from group to group.
			g.groupID, g.inGroup = append(g.groupID[:0], id...), true
			g.groupFP = fp
		} else if fp != g.groupFP {
			g.mixed = true
		}
		// Records are kept for the group only: usually one.
		start := len(g.arena)
		g.arena = append(g.arena, g.it.Key()...)
		mid := len(g.arena)
		g.arena = append(g.arena, g.it.Value()...)
		g.group = append(g.group, record{key: g.arena[start:mid:mid], value: g.arena[mid:len(g.arena):len(g.arena)]})
	}
	if err := g.it.Err(); err != nil {
		return fmt.Errorf("sort by transaction id: %w", err)
	}
	if g.inGroup {
		if err := g.endGroup(); err != nil {
			return err
		}
	}
	return g.dispatch()
}

// endGroup adds the current group to the batch: one candidate and its
// identical duplicates, or a conflict (every copy rejected).
func (g *grouper) endGroup() error {
	if g.cur == nil {
		select {
		case g.cur = <-g.free:
		default:
			g.cur = &batch{entries: make([]entry, 0, MaxLookup), ids: make([]string, 0, MaxLookup)}
		}
	}
	if g.mixed {
		// The copies go to the decider: the group's memory with them.
		g.cur.entries = append(g.cur.entries, entry{conflict: g.group})
		g.group, g.arena = nil, nil
	} else {
		// The first copy is the candidate, decoded with its batch.
		e := entry{dups: len(g.group) - 1}
		first, b := g.group[0], g.cur
		e.rec[0] = len(b.arena)
		b.arena = append(b.arena, first.key...)
		e.rec[1] = len(b.arena)
		b.arena = append(b.arena, first.value...)
		e.rec[2] = len(b.arena)
		e.cand.fp = g.groupFP
		b.entries = append(b.entries, e)
		clear(g.group)
		g.group = g.group[:0]
		if cap(g.arena) > 1<<20 {
			g.arena = nil // a huge group: do not keep its memory
		}
		g.arena = g.arena[:0]
	}
	g.inGroup, g.mixed = false, false
	if len(g.cur.entries) == MaxLookup {
		return g.dispatch()
	}
	return nil
}

// recycle hands b back for reuse once the caller is done with it.
func (g *grouper) recycle(b *batch) {
	clear(b.entries) // drop the references to transactions and copies
	clear(b.ids)
	if cap(b.arena) > 4<<20 {
		b.arena = nil // huge records: do not keep their memory
	}
	// Field by field: strs stays where it is (a Strings is not copied)
	// and goes on making strings in its chunk.
	b.entries, b.ids, b.arena = b.entries[:0], b.ids[:0], b.arena[:0]
	b.ready, b.claims, b.err = nil, nil, nil
	select {
	case g.free <- b:
	default:
	}
}

// dispatch starts decoding the current batch, and looking up its claims,
// and sends the batch.
func (g *grouper) dispatch() error {
	b := g.cur
	g.cur = nil
	if b == nil || len(b.entries) == 0 {
		return nil
	}
	b.ready = make(chan struct{})
	select {
	case g.sem <- struct{}{}:
	case <-g.ctx.Done():
		return g.ctx.Err()
	}
	g.inflight.Add(1)
	go func() {
		defer g.inflight.Done()
		defer func() { <-g.sem }()
		defer close(b.ready)
		b.err = g.prepare(b)
	}()
	select {
	case g.out <- b:
		return nil
	case <-g.ctx.Done():
		return g.ctx.Err()
	}
}

// prepare decodes the candidates of b and looks up their claims.
func (g *grouper) prepare(b *batch) error {
	for i := range b.entries {
		e := &b.entries[i]
		if e.conflict != nil {
			continue
		}
		r := e.rec
		if err := decodeRecord(b.arena[r[0]:r[1]], b.arena[r[1]:r[2]], &e.cand.tx, &b.strs); err != nil {
			return fmt.Errorf("sort by transaction id: %w", err)
		}
		b.ids = append(b.ids, e.cand.tx.ID)
	}
	if g.index == nil || len(b.ids) == 0 {
		return nil
	}
	claims, err := g.index.Lookup(g.ctx, g.job, b.ids)
	if err != nil {
		return fmt.Errorf("look up the dedupe index: %w", err)
	}
	b.claims = make(map[string]Claim, len(claims))
	for _, cl := range claims {
		b.claims[cl.ID] = cl
	}
	return nil
}

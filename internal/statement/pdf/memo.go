package pdf

import (
	"strings"
	"sync"
)

// Most of a document's wrapped text is the same for every agency of a
// locale: the notes, the catalog's sentences, the column headings. Their
// layout (wrap, headLines) measures each text again and again, token by
// token and size by size; layoutMemo keeps the result per text, font and
// width, so that the next document takes it from there.
//
// Laying out a text is not free of effects: measuring selects fonts (apply
// writes a font operator into the page when the font changes) and the
// first measurement of a configured font embeds it (use). So a memo entry
// keeps, besides the result, the font selections and embeddings made
// while it was computed (fontEvent) and the family, style and size it left
// current; a hit does them again, in order, and so writes exactly the
// operators the computation wrote: whether an apply writes one depends only
// on the font fpdf has, which the replay sees as the computation did.

// layoutKey is what a layout depends on besides the Renderer's fonts (a
// memo is per set of configured fonts): the kind of layout, the text, the
// width, the current family, style and size, and the direction mode.
type layoutKey struct {
	kind          uint8 // kindWrap or kindHead
	family, style string
	size, w       float64
	auto          bool
	text          string
}

const (
	kindWrap uint8 = iota // wrap(text, w) in family, style, size
	kindHead              // headLines of a column titled text, w wide, in a table of size
)

// fontEvent is an apply(family, style, size) (extra < 0) or the embedding
// of configured font extra (use).
type fontEvent struct {
	extra         int
	family, style string
	size          float64
}

// layout is a memo entry: the result (lines and, for a heading, its size),
// the font events in order and the font it leaves current. Its slices are
// shared by every document: read only.
type layout struct {
	lines         []string
	size          float64
	events        []fontEvent
	family, style string
	fsize         float64
}

// memoBytes bounds a memo: when the entries added since the last turn
// hold more, the older generation is dropped (a text used by every
// document is taken back into the new one on its next use). A memo holds
// at most about twice this, whatever the number of agencies.
const memoBytes = 512 << 10

// layoutMemo is a bounded memo of layouts, safe for concurrent documents.
type layoutMemo struct {
	mu        sync.Mutex
	cur, prev map[layoutKey]*layout
	curBytes  int
}

func (m *layoutMemo) get(k layoutKey) *layout {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.cur[k]; ok {
		return l
	}
	l, ok := m.prev[k]
	if ok {
		m.add(k, l)
	}
	return l
}

func (m *layoutMemo) put(k layoutKey, l *layout) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(k, l)
}

// add stores l in the current generation; m.mu is held.
func (m *layoutMemo) add(k layoutKey, l *layout) {
	if m.cur == nil {
		m.cur = map[layoutKey]*layout{}
	}
	if _, ok := m.cur[k]; ok {
		return
	}
	m.cur[k] = l
	m.curBytes += l.bytes(k)
	if m.curBytes > memoBytes {
		m.prev, m.cur, m.curBytes = m.cur, map[layoutKey]*layout{}, 0
	}
}

// bytes is about the memory an entry holds.
func (l *layout) bytes(k layoutKey) int {
	n := 160 + len(k.text) + len(k.family) + len(k.style) + 48*len(l.events)
	for _, s := range l.lines {
		n += 16 + len(s)
	}
	return n
}

// memos are the layout memos, one per list of configured fonts (a
// Renderer's statements.fonts; "" for none). A process configures one or
// two lists; each memo is bounded (memoBytes).
var memos sync.Map // string -> *layoutMemo

// memoFor is the memo of the documents printed with extras.
func memoFor(extras []*extraFont) *layoutMemo {
	paths := make([]string, len(extras))
	for i, e := range extras {
		paths[i] = e.path
	}
	key := strings.Join(paths, "\x00")
	if m, ok := memos.Load(key); ok {
		return m.(*layoutMemo)
	}
	m, _ := memos.LoadOrStore(key, &layoutMemo{})
	return m.(*layoutMemo)
}

// memoized returns the layout of k: from the memo, its font events done
// again, or computed by fn (which records its font events) and stored.
// A document in error (fpdf's widths are then 0) neither reads nor
// stores.
func (d *sheet) memoized(k layoutKey, fn func() ([]string, float64)) ([]string, float64) {
	if d.memo == nil || d.f.Err() {
		return fn()
	}
	if l := d.memo.get(k); l != nil {
		for _, e := range l.events {
			if e.extra >= 0 {
				d.embed(e.extra)
			} else {
				d.apply(e.family, e.style, e.size)
			}
		}
		d.family, d.style, d.size = l.family, l.style, l.fsize
		return l.lines, l.size
	}
	outer := d.events
	var evs []fontEvent
	d.events = &evs
	lines, size := fn()
	d.events = outer
	if outer != nil {
		for _, e := range evs {
			d.record(e)
		}
	}
	if !d.f.Err() {
		d.memo.put(k, &layout{lines: lines, size: size, events: evs, family: d.family, style: d.style, fsize: d.size})
	}
	return lines, size
}

// record notes a font event of the layout being computed (none: nothing
// to note). An event equal to the one before changes nothing.
func (d *sheet) record(e fontEvent) {
	if d.events == nil {
		return
	}
	if n := len(*d.events); n > 0 && (*d.events)[n-1] == e {
		return
	}
	*d.events = append(*d.events, e)
}

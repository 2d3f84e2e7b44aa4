package fpdf

// [reportjob patch] The subsets of the UTF-8 fonts, memoized.
//
// putfonts embeds, for each UTF-8 font of a document, the subset of the
// glyphs the document used: the cut font, its /W widths and its
// CIDToGIDMap, the two streams compressed. All of it follows from the
// font's bytes and the document's used runes alone (GenerateCutFont reads
// the font afresh; cidWidths reads the font definition's widths, which
// the bytes give), and it was most of a statement's CPU. Documents that
// use the same runes of the same font (a statement's labels and digits in
// the bold and mono fonts; a name in the regular one changes its runes)
// get it from utf8Subsets, the same bytes. Only fonts added with their
// sha256 (AddUTF8FontFromBytes and AddUTF8FontFromBytesSum both set it)
// are memoized.

import (
	"encoding/binary"
	"sort"
	"sync"
)

// runeMaps recycles the used-rune maps of UTF-8 fonts (makeSubsetRange),
// empty, each sized for runeMapHint entries: a statement's three fonts
// made three of about 4.6 KB each, 14 KB of garbage per document (1.4 GB
// over a month of 100,000 agencies). enddoc hands a document's back once
// its fonts are written (releaseRuneMaps).
var runeMaps = sync.Pool{New: func() any { return make(map[int]int, runeMapHint) }}

// runeMapHint is the 57 runes makeSubsetRange puts in a map and about
// 100 a statement adds per font.
const runeMapHint = 57 + 100

// releaseRuneMaps hands the used-rune maps of the document's fonts back
// to runeMaps, once putfonts has written the fonts: nothing reads them
// afterwards. The fonts (and the current font) are left with none, so a
// text written after the document is closed panics on the nil map instead
// of marking runes in a map that another document now uses.
func (f *Fpdf) releaseRuneMaps() {
	for key, def := range f.fonts {
		if def.usedRunes == nil {
			continue
		}
		for r := range def.usedRunes { // compiled to a map clear
			delete(def.usedRunes, r)
		}
		runeMaps.Put(def.usedRunes)
		def.usedRunes = nil
		f.fonts[key] = def
	}
	f.currentFont.usedRunes = nil
}

// utf8SubsetCap bounds the subsets kept: each is about the size of its
// compressed streams, less than the statement PDF that embeds three of
// them (about 50 KB).
const utf8SubsetCap = 64

// utf8Subset is what putfonts embeds of one UTF-8 font for one set of
// used runes. Read-only once made.
type utf8Subset struct {
	widths      string // the /W entry
	cidToGidMap []byte // compressed
	fontStream  []byte // the cut font, compressed
	fontSize    int    // the cut font's length, uncompressed
}

// subsetCache is a bounded map of subsets; the oldest goes first.
type subsetCache struct {
	mu    sync.Mutex
	m     map[string]*utf8Subset
	order []string
}

var utf8Subsets = &subsetCache{m: map[string]*utf8Subset{}}

func (c *subsetCache) get(key string) *utf8Subset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

func (c *subsetCache) put(key string, s *utf8Subset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return
	}
	if len(c.order) == utf8SubsetCap {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = s
	c.order = append(c.order, key)
}

// subsetKey is the font's sha256 and its used runes: what the subset is
// a function of. Every entry of usedRunes is in it once: a rune r below
// U+0800 that maps to itself as a bit of the first bitmap, one that maps
// to 0 as a bit of the second, any other entry (k, v) as two varints, in
// key order (a bitmap is read in rune order: no sort but of the others,
// the few runes above U+0800).
func subsetKey(sum *[32]byte, usedRunes map[int]int) string {
	const low = 0x800
	b := make([]byte, len(sum)+2*low/8, len(sum)+2*low/8+64)
	copy(b, sum[:])
	self, zero := b[len(sum):len(sum)+low/8], b[len(sum)+low/8:]
	var rest [][2]int
	for k, v := range usedRunes {
		switch {
		case k >= 0 && k < low && v == k:
			self[k>>3] |= 1 << (k & 7)
		case k >= 0 && k < low && v == 0:
			zero[k>>3] |= 1 << (k & 7)
		default:
			rest = append(rest, [2]int{k, v})
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i][0] < rest[j][0] })
	for _, kv := range rest {
		b = binary.AppendVarint(b, int64(kv[0]))
		b = binary.AppendVarint(b, int64(kv[1]))
	}
	return string(b)
}

// utf8Subset returns the subset of font for usedRunes (rune 0 already
// deleted), made by cutUTF8Subset or memoized.
func (f *Fpdf) utf8Subset(font *fontDefType, usedRunes map[int]int) *utf8Subset {
	if font.utf8File.sum == nil {
		return f.cutUTF8Subset(font, usedRunes)
	}
	key := subsetKey(font.utf8File.sum, usedRunes)
	if s := utf8Subsets.get(key); s != nil {
		return s
	}
	s := f.cutUTF8Subset(font, usedRunes)
	utf8Subsets.put(key, s)
	return s
}

// cutUTF8Subset makes the subset of font for usedRunes, as upstream's
// putfonts did in place.
func (f *Fpdf) cutUTF8Subset(font *fontDefType, usedRunes map[int]int) *utf8Subset {
	utf8FontStream := font.utf8File.GenerateCutFont(usedRunes)
	CodeSignDictionary := font.utf8File.CodeSymbolDictionary
	delete(CodeSignDictionary, 0)
	s := &utf8Subset{widths: cidWidths(font, font.utf8File.LastRune), fontSize: len(utf8FontStream)}

	cidToGidMap := make([]byte, 256*256*2)
	for cc, glyph := range CodeSignDictionary {
		cidToGidMap[cc*2] = byte(glyph >> 8)
		cidToGidMap[cc*2+1] = byte(glyph & 0xFF)
	}
	mem := xmem.compress(cidToGidMap)
	s.cidToGidMap = append([]byte(nil), mem.bytes()...)
	mem.release()

	mem = xmem.compress(utf8FontStream)
	s.fontStream = append([]byte(nil), mem.bytes()...)
	mem.release()
	return s
}

// putSharedStream is putstream of b, bytes shared with other documents
// (a memoized subset's): putstream encrypts a protected document's stream
// in place, so it gets a copy then.
func (f *Fpdf) putSharedStream(b []byte) {
	if f.protect.encrypted {
		b = append([]byte(nil), b...)
	}
	f.putstream(b)
}

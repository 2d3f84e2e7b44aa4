package item

import "strings"

// Strings makes strings out of bytes in chunks of memory that many strings
// share: one allocation a chunk instead of one a string, for the decoders
// that make a few strings for each of millions of items.
//
// A string keeps its whole chunk alive. Use one Strings for strings that
// go together (a page of items, a batch of transactions) and copy a string
// kept longer than the rest (strings.Clone). The zero value is ready to
// use. A Strings is not safe for concurrent use; the strings it makes
// are, like any string: bytes written to a chunk are never written again.
type Strings struct {
	b strings.Builder // the current chunk (a Builder never writes over what String returned)
}

// stringsChunk is a chunk's size: a few hundred items' strings.
const stringsChunk = 32 << 10

// Concat returns the concatenation of parts as a string in the current
// chunk (a new one when it has no room left). A nil *Strings makes the
// string in an allocation of its own, of its size.
func (s *Strings) Concat(parts ...[]byte) string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if s == nil {
		var b strings.Builder
		b.Grow(n)
		for _, p := range parts {
			b.Write(p)
		}
		return b.String()
	}
	if s.b.Cap()-s.b.Len() < n {
		// The old chunk stays, whole, for as long as its strings.
		s.b = strings.Builder{}
		s.b.Grow(max(n, stringsChunk))
	}
	start := s.b.Len()
	for _, p := range parts {
		s.b.Write(p)
	}
	return s.b.String()[start:]
}

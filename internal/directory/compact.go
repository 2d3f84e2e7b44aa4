package directory

import (
	"encoding/binary"
	"slices"
	"strings"
	"unsafe"
)

// A parsed directory is held compact: a close of 100,000 agencies keeps it
// for its whole run, and a map of Entry values with a string per field
// costs some 370 bytes an agency against the 140 of its CSV row. Every
// entry is packed into one byte arena, sorted by agency id: each field as
// a uvarint length and its bytes (the lists as a count, then each item),
// the terms as a uvarint days+1 (0: none); index holds each entry's offset.
// Lookup decodes an entry whose strings point into the arena (never
// written after it is built), so a recipient a close keeps shares its
// bytes.

// compact packs entries (by agency id).
func compact(entries map[string]Entry) (arena []byte, index []uint32) {
	ids := make([]string, 0, len(entries))
	size := 0
	for id, e := range entries {
		ids = append(ids, id)
		size += len(id) + len(e.LegalName) + len(e.Country) + len(e.TaxID) + len(e.Locale) + 16
		for _, l := range e.Address {
			size += len(l) + 2
		}
		for _, m := range e.Emails {
			size += len(m) + 2
		}
	}
	slices.Sort(ids)
	arena = make([]byte, 0, size)
	index = make([]uint32, len(ids))
	str := func(s string) {
		arena = binary.AppendUvarint(arena, uint64(len(s)))
		arena = append(arena, s...)
	}
	list := func(l []string) {
		arena = binary.AppendUvarint(arena, uint64(len(l)))
		for _, s := range l {
			str(s)
		}
	}
	for i, id := range ids {
		e := entries[id]
		index[i] = uint32(len(arena))
		str(id)
		str(e.LegalName)
		list(e.Address)
		str(e.Country)
		str(e.TaxID)
		list(e.Emails)
		str(e.Locale)
		terms := uint64(0)
		if e.HasTerms {
			terms = uint64(e.PaymentTermsDays) + 1
		}
		arena = binary.AppendUvarint(arena, terms)
	}
	return arena, index
}

// reader decodes an entry of the arena.
type reader struct {
	b   []byte
	off int
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	r.off += n
	return v
}

func (r *reader) str() string {
	n := int(r.uvarint())
	if n == 0 {
		return ""
	}
	s := unsafe.String(&r.b[r.off], n)
	r.off += n
	return s
}

func (r *reader) list() []string {
	n := int(r.uvarint())
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

// idAt returns the agency id of the entry at offset off.
func idAt(arena []byte, off uint32) string {
	r := reader{b: arena, off: int(off)}
	return r.str()
}

// lookup finds agency id in the arena.
func lookup(arena []byte, index []uint32, id string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(index, id, func(off uint32, id string) int { return strings.Compare(idAt(arena, off), id) })
	if !ok {
		return Entry{}, false
	}
	r := reader{b: arena, off: int(index[i])}
	e := Entry{AgencyID: r.str(), LegalName: r.str(), Address: r.list(), Country: r.str(), TaxID: r.str(), Emails: r.list(),
		Locale: r.str()}
	if t := r.uvarint(); t > 0 {
		e.PaymentTermsDays, e.HasTerms = int(t-1), true
	}
	return e, true
}

package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/item"
)

// An item's attributes are stored as
//
//	version byte (1)
//	uvarint count
//	count x (uvarint len, name, type byte, uvarint len, text)
//
// with names in byte order, so that equal attributes encode to equal
// bytes. Texts are kept byte for byte: numbers keep their exact decimal
// text and strings are never re-encoded.
const codecVersion = 1

func encodeAttrs(attrs map[string]item.Value) []byte {
	if b, ok := encodeContractAttrs(attrs); ok {
		return b
	}
	names := make([]string, 0, len(attrs))
	size := 1 + binary.MaxVarintLen64
	for name, v := range attrs {
		names = append(names, name)
		size += 1 + 2*binary.MaxVarintLen64 + len(name) + len(v.Text)
	}
	slices.Sort(names)
	buf := make([]byte, 0, size)
	buf = append(buf, codecVersion)
	buf = binary.AppendUvarint(buf, uint64(len(names)))
	for _, name := range names {
		v := attrs[name]
		buf = binary.AppendUvarint(buf, uint64(len(name)))
		buf = append(buf, name...)
		buf = append(buf, byte(v.Type))
		buf = binary.AppendUvarint(buf, uint64(len(v.Text)))
		buf = append(buf, v.Text...)
	}
	return buf
}

// contractByName are the positions in item.ContractAttrs of the
// contract's names in byte order.
var contractByName = func() []int {
	idx := make([]int, len(item.ContractAttrs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(item.ContractAttrs[a], item.ContractAttrs[b]) })
	return idx
}()

// encodeContractAttrs is encodeAttrs of a map that holds contract
// attributes only (every item ingest writes), without sorting: ok is false
// for any other map.
func encodeContractAttrs(attrs map[string]item.Value) ([]byte, bool) {
	it := item.Item{Attrs: attrs}
	vals, present := it.Contract()
	if bits.OnesCount16(present) != len(attrs) {
		return nil, false
	}
	size := 1 + binary.MaxVarintLen64
	for i, name := range item.ContractAttrs {
		if present&(1<<i) != 0 {
			size += 1 + 2*binary.MaxVarintLen64 + len(name) + len(vals[i].Text)
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, codecVersion)
	buf = binary.AppendUvarint(buf, uint64(len(attrs)))
	for _, i := range contractByName {
		if present&(1<<i) == 0 {
			continue
		}
		name, v := item.ContractAttrs[i], vals[i]
		buf = binary.AppendUvarint(buf, uint64(len(name)))
		buf = append(buf, name...)
		buf = append(buf, byte(v.Type))
		buf = binary.AppendUvarint(buf, uint64(len(v.Text)))
		buf = append(buf, v.Text...)
	}
	return buf, true
}

var errCorrupt = errors.New("corrupt attribute encoding")

// decodeAttrs decodes b, copying every string out of it (b may be bbolt's
// memory, valid only inside its transaction). The copy is one allocation:
// the texts share one string, and the contract's attribute names are the
// package constants (no copy at all).
func decodeAttrs(b []byte) (map[string]item.Value, error) {
	if len(b) == 0 || b[0] != codecVersion {
		return nil, fmt.Errorf("%w: unknown version", errCorrupt)
	}
	return decodeAttrsIn(b, string(b))
}

// decodeItem decodes a stored item: its sort key k and attributes v, with
// one allocation for the strings of both.
func decodeItem(k, v []byte) (string, map[string]item.Value, error) {
	if len(v) == 0 || v[0] != codecVersion {
		return "", nil, fmt.Errorf("%w: unknown version", errCorrupt)
	}
	var sb strings.Builder
	sb.Grow(len(k) + len(v))
	sb.Write(k)
	sb.Write(v)
	all := sb.String()
	attrs, err := decodeAttrsIn(v, all[len(k):])
	return all[:len(k)], attrs, err
}

// decodeRecord decodes a stored item of partition pk, sort key k and
// attributes v into r (every field set). The sort key and the contract
// attributes' texts (not their names, which are the package constants) are
// copied into one string, made by strs (nil: an allocation of its own),
// and a map is made only for an item with other attributes. Its errors are
// decodeItem's.
func decodeRecord(pk string, k, v []byte, r *item.Record, strs *item.Strings) error {
	*r = item.Record{PK: pk}
	var spans [item.NumContractAttrs]textSpan
	ok := contractSpans(v, &spans)
	if !ok {
		// Another attribute, or a corrupt encoding: the map's way, whose
		// errors these are.
		sk, attrs, err := decodeItem(k, v)
		if err != nil {
			return err
		}
		it := item.Item{PK: pk, SK: sk, Attrs: attrs}
		*r = item.RecordOf(&it)
		return nil
	}
	var parts [1 + item.NumContractAttrs][]byte
	parts[0] = k
	n := 1
	for i := range spans {
		if sp := &spans[i]; sp.present {
			parts[n] = v[sp.start:sp.end]
			n++
		}
	}
	all := strs.Concat(parts[:n]...)
	r.SK = all[:len(k)]
	at := len(k)
	for i := range spans {
		if sp := &spans[i]; sp.present {
			n := sp.end - sp.start
			r.Vals[i] = item.Value{Type: sp.typ, Text: all[at : at+n]}
			r.Present |= 1 << i
			at += n
		}
	}
	return nil
}

// textSpan is where an attribute's text is in an encoding.
type textSpan struct {
	start, end int
	typ        item.Type
	present    bool
}

// contractSpans finds the contract attributes of the encoding b: where
// their texts are. ok is false when b has an
// attribute outside the contract or does not decode.
func contractSpans(b []byte, spans *[item.NumContractAttrs]textSpan) (ok bool) {
	if len(b) == 0 || b[0] != codecVersion {
		return false
	}
	n, pos, err := uvarintAt(b, 1)
	if err != nil || n > uint64(len(b)-pos) {
		return false
	}
	for range n {
		ns, ne, ok := spanAt(b, pos)
		if !ok {
			return false
		}
		i := contractPos(b[ns:ne])
		if i < 0 || ne >= len(b) {
			return false
		}
		typ := item.Type(b[ne])
		ts, te, ok := spanAt(b, ne+1)
		if !ok {
			return false
		}
		pos = te
		spans[i] = textSpan{start: ts, end: te, typ: typ, present: true} // a name twice: the last one counts, as in a map
	}
	return pos == len(b)
}

// spanAt is lenStringAt without its error value (ok is false where it
// fails): a length under 128, one byte (every contract name, the usual
// text), is read without binary.Uvarint.
func spanAt(b []byte, pos int) (start, end int, ok bool) {
	if pos < len(b) && b[pos] < 0x80 {
		start, end = pos+1, pos+1+int(b[pos])
		return start, end, end <= len(b)
	}
	if pos >= len(b) {
		return 0, 0, false
	}
	n, w := binary.Uvarint(b[pos:])
	if w <= 0 || n > uint64(len(b)-pos-w) {
		return 0, 0, false
	}
	return pos + w, pos + w + int(n), true
}

// contractPos returns the position in item.ContractAttrs of the name b,
// -1 for another name, without allocating.
func contractPos(b []byte) int {
	switch string(b) {
	case item.AttrTransactionID:
		return 0
	case item.AttrAgencyID:
		return 1
	case item.AttrAmount:
		return 2
	case item.AttrCurrency:
		return 3
	case item.AttrKind:
		return 4
	case item.AttrCommissionBPS:
		return 5
	case item.AttrCustomerID:
		return 6
	case item.AttrProductID:
		return 7
	case item.AttrRecordedAt:
		return 8
	}
	return -1
}

// decodeAttrsIn decodes b, whose copy is all: texts (and names outside
// the contract) are substrings of all.
func decodeAttrsIn(b []byte, all string) (map[string]item.Value, error) {
	pos := 1
	n, pos, err := uvarintAt(b, pos)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)-pos) { // every attribute takes at least 3 bytes
		return nil, fmt.Errorf("%w: %d attributes in %d bytes", errCorrupt, n, len(b)-pos)
	}
	attrs := make(map[string]item.Value, n)
	for range n {
		var ns, ne, ts, te int
		if ns, ne, pos, err = lenStringAt(b, pos); err != nil {
			return nil, err
		}
		name := knownName(b[ns:ne])
		if name == "" {
			name = all[ns:ne]
		}
		if pos >= len(b) {
			return nil, fmt.Errorf("%w: attribute %q has no type", errCorrupt, name)
		}
		typ := item.Type(b[pos])
		if ts, te, pos, err = lenStringAt(b, pos+1); err != nil {
			return nil, err
		}
		attrs[name] = item.Value{Type: typ, Text: all[ts:te]}
	}
	if pos != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(b)-pos)
	}
	return attrs, nil
}

// knownName returns the contract's attribute name equal to b, "" for
// another name. The comparisons do not allocate.
func knownName(b []byte) string {
	for _, n := range item.ContractAttrs {
		if string(b) == n {
			return n
		}
	}
	return ""
}

func uvarintAt(b []byte, pos int) (uint64, int, error) {
	v, n := binary.Uvarint(b[pos:])
	if n <= 0 {
		return 0, 0, fmt.Errorf("%w: bad length", errCorrupt)
	}
	return v, pos + n, nil
}

// lenStringAt reads a length-prefixed string at pos: its start and end in
// b and the position after it.
func lenStringAt(b []byte, pos int) (start, end, next int, err error) {
	n, pos, err := uvarintAt(b, pos)
	if err != nil {
		return 0, 0, 0, err
	}
	if n > uint64(len(b)-pos) {
		return 0, 0, 0, fmt.Errorf("%w: length %d past the end", errCorrupt, n)
	}
	return pos, pos + int(n), pos + int(n), nil
}

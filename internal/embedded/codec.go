package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

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

var errCorrupt = errors.New("corrupt attribute encoding")

// decodeAttrs decodes b, copying every string out of it (b may be bbolt's
// memory, valid only inside its transaction).
func decodeAttrs(b []byte) (map[string]item.Value, error) {
	if len(b) == 0 || b[0] != codecVersion {
		return nil, fmt.Errorf("%w: unknown version", errCorrupt)
	}
	b = b[1:]
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)) { // every attribute takes at least 3 bytes
		return nil, fmt.Errorf("%w: %d attributes in %d bytes", errCorrupt, n, len(b))
	}
	attrs := make(map[string]item.Value, n)
	for range n {
		var name, text string
		if name, b, err = lenString(b); err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: attribute %q has no type", errCorrupt, name)
		}
		typ := item.Type(b[0])
		if text, b, err = lenString(b[1:]); err != nil {
			return nil, err
		}
		attrs[name] = item.Value{Type: typ, Text: text}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(b))
	}
	return attrs, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad length", errCorrupt)
	}
	return v, b[n:], nil
}

func lenString(b []byte) (string, []byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return "", nil, err
	}
	if n > uint64(len(b)) {
		return "", nil, fmt.Errorf("%w: length %d past the end", errCorrupt, n)
	}
	return string(b[:n]), b[n:], nil
}

package item

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// ErrCorruptRecord is returned by DecodeBinary for bytes AppendBinary did
// not write.
var ErrCorruptRecord = errors.New("corrupt transaction record")

// AppendBinary appends t's compact binary encoding to dst: the record the
// job's external sorts spill to disk. Times keep seconds and nanoseconds
// apart (UnixNano only covers 1678..2262).
func (t *Transaction) AppendBinary(dst []byte) []byte {
	for _, s := range [...]string{t.PK, t.SK, t.ID} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return t.AppendBinaryBody(dst)
}

// AppendBinaryBody appends t's compact binary encoding without its keys
// and transaction id (the last part of AppendBinary's): for a record
// whose sort key already holds them (DecodeBinaryBody takes them back).
func (t *Transaction) AppendBinaryBody(dst []byte) []byte {
	for _, s := range [...]string{t.AgencyID, t.CustomerID, t.ProductID, string(t.Kind), t.Currency.Code} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendVarint(dst, int64(t.Currency.Digits))
	dst = binary.AppendVarint(dst, t.Amount)
	dst = binary.AppendVarint(dst, int64(t.BPS))
	hasBPS := byte(0)
	if t.HasBPS {
		hasBPS = 1
	}
	dst = append(dst, hasBPS)
	dst = binary.AppendVarint(dst, t.RecordedAt.Unix())
	dst = binary.AppendVarint(dst, int64(t.RecordedAt.Nanosecond()))
	return dst
}

// DecodeBinary decodes a record AppendBinary wrote into t. Strings are
// copied: b may be reused after it returns. The copy is one allocation
// for the whole record, which the strings share.
func (t *Transaction) DecodeBinary(b []byte) error {
	return t.decode(nil, nil, nil, b, 8, nil)
}

// DecodeBinaryBody decodes a record AppendBinaryBody wrote into t, with
// the keys and transaction id given apart. Like DecodeBinary, it copies
// every string with one allocation.
func (t *Transaction) DecodeBinaryBody(pk, sk, id, body []byte) error {
	return t.decode(pk, sk, id, body, 5, nil)
}

// DecodeBinaryBodyIn is DecodeBinaryBody with t's strings made by s: in
// memory shared with the other transactions s decodes.
func (t *Transaction) DecodeBinaryBodyIn(s *Strings, pk, sk, id, body []byte) error {
	return t.decode(pk, sk, id, body, 5, s)
}

// decode decodes b, which holds the last n of the 8 strings of
// AppendBinary (n is 8 or 5: then pk, sk and id are the first three),
// with the strings made by arena (nil: one allocation of their own).
func (t *Transaction) decode(pk, sk, id, b []byte, n int, arena *Strings) error {
	d := decoder{b: b}
	var offs [8][2]int // start and end of each string in all
	for i := 8 - n; i < 8; i++ {
		offs[i] = d.str()
	}
	digits, amount, bps := d.varint(), d.varint(), d.varint()
	hasBPS := d.byte() == 1
	sec, nsec := d.varint(), d.varint()
	if d.err == nil && d.pos != len(b) {
		d.err = ErrCorruptRecord
	}
	if d.err != nil {
		*t = Transaction{}
		return d.err
	}
	var all string
	if n == 8 {
		all = string(b[offs[0][0]:offs[7][1]])
		base := offs[0][0]
		for i := range offs {
			offs[i][0] -= base
			offs[i][1] -= base
		}
	} else {
		// One copy: pk, sk, id, then the body's strings as they lie in b.
		head := len(pk) + len(sk) + len(id)
		all = arena.Concat(pk, sk, id, b[offs[3][0]:offs[7][1]])
		offs[0] = [2]int{0, len(pk)}
		offs[1] = [2]int{len(pk), len(pk) + len(sk)}
		offs[2] = [2]int{len(pk) + len(sk), head}
		base := offs[3][0] - head
		for i := 3; i < 8; i++ {
			offs[i][0] -= base
			offs[i][1] -= base
		}
	}
	var strs [8]string
	for i, o := range offs {
		strs[i] = all[o[0]:o[1]]
	}
	*t = Transaction{
		PK: strs[0], SK: strs[1], ID: strs[2], AgencyID: strs[3], CustomerID: strs[4], ProductID: strs[5],
		Kind:     Kind(strs[6]),
		Currency: money.Currency{Code: strs[7], Digits: int(digits)},
		Amount:   amount,
		BPS:      int32(bps),
		HasBPS:   hasBPS,
	}
	t.RecordedAt = time.Unix(sec, nsec).UTC()
	return nil
}

// decoder reads b from pos; after the first error every read returns
// zero values and err stays set.
type decoder struct {
	b   []byte
	pos int
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.err = ErrCorruptRecord
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.pos:])
	if n <= 0 {
		d.err = ErrCorruptRecord
		return 0
	}
	d.pos += n
	return v
}

// str returns the start and end in b of the next length-prefixed string.
func (d *decoder) str() [2]int {
	n := d.uvarint()
	if d.err != nil {
		return [2]int{d.pos, d.pos}
	}
	if uint64(len(d.b)-d.pos) < n {
		d.err = ErrCorruptRecord
		return [2]int{d.pos, d.pos}
	}
	start := d.pos
	d.pos += int(n)
	return [2]int{start, d.pos}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.pos < 1 {
		d.err = ErrCorruptRecord
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

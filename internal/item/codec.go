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
	for _, s := range [...]string{t.PK, t.SK, t.ID, t.AgencyID, t.CustomerID, t.ProductID, string(t.Kind), t.Currency.Code} {
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
	d := decoder{b: b}
	var offs [8][2]int // start and end of each string in b
	for i := range offs {
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
	all := string(b[offs[0][0]:offs[7][1]])
	base := offs[0][0]
	var strs [8]string
	for i, o := range offs {
		strs[i] = all[o[0]-base : o[1]-base]
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

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
// copied: b may be reused after it returns.
func (t *Transaction) DecodeBinary(b []byte) error {
	d := decoder{b: b}
	var strs [8]string
	for i := range strs {
		strs[i] = d.str()
	}
	*t = Transaction{
		PK: strs[0], SK: strs[1], ID: strs[2], AgencyID: strs[3], CustomerID: strs[4], ProductID: strs[5],
		Kind:     Kind(strs[6]),
		Currency: money.Currency{Code: strs[7], Digits: int(d.varint())},
		Amount:   d.varint(),
		BPS:      int32(d.varint()),
	}
	t.HasBPS = d.byte() == 1
	sec := d.varint()
	t.RecordedAt = time.Unix(sec, d.varint()).UTC()
	if d.err == nil && len(d.b) != 0 {
		d.err = ErrCorruptRecord
	}
	return d.err
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrCorruptRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = ErrCorruptRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if uint64(len(d.b)) < n {
		d.err = ErrCorruptRecord
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.err = ErrCorruptRecord
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

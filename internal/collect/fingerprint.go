package collect

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"

	"github.com/reportjob/reportjob/internal/item"
)

// fingerprintAttrs are the attributes a period's fingerprint covers, with
// the keys: the producer contract's. An attribute outside the contract
// (which the job ignores) can change without making the period differ.
var fingerprintAttrs = item.ContractAttrs

// Fingerprint is an order-independent fingerprint of a set of items: the
// sum, modulo 2^256, of the SHA-256 of each item's canonical encoding. Two
// reads of a period give the same fingerprint exactly when they return the
// same items (keys, and the contract attributes with their types and exact
// text), whatever the order of partitions and pages. The zero value is the
// fingerprint of no items.
//
// The canonical encoding of an item, each string as an 8-byte big-endian
// length then its bytes: "reportjob.item.v1", the partition key, the sort
// key, then for each contract attribute in the order transaction_id,
// agency_id, amount, currency, kind, commission_bps, customer_id,
// product_id, recorded_at: a byte 0 if absent, else the byte 1, the type
// ("S", "N" or "other") and the text.
type Fingerprint struct {
	sum [4]uint64 // little-endian limbs
}

// Add adds one item.
func (f *Fingerprint) Add(it *item.Item, buf []byte) []byte {
	vals, present := it.Contract()
	return f.addContract(it.PK, it.SK, &vals, present, buf)
}

// addContract adds the item with keys pk and sk and the contract
// attributes vals and present (item.Item.Contract).
func (f *Fingerprint) addContract(pk, sk string, vals *[item.NumContractAttrs]item.Value, present uint16, buf []byte) []byte {
	buf = buf[:0]
	buf = appendStr(buf, "reportjob.item.v1")
	buf = appendStr(buf, pk)
	buf = appendStr(buf, sk)
	for i := range fingerprintAttrs {
		if present&(1<<i) == 0 {
			buf = append(buf, 0)
			continue
		}
		v := vals[i]
		buf = append(buf, 1)
		buf = appendStr(buf, v.Type.String())
		buf = appendStr(buf, v.Text)
	}
	h := sha256.Sum256(buf)
	var limbs [4]uint64
	for i := range limbs {
		limbs[i] = binary.BigEndian.Uint64(h[24-8*i:])
	}
	f.add(limbs)
	return buf
}

// Merge adds every item of g.
func (f *Fingerprint) Merge(g Fingerprint) { f.add(g.sum) }

func (f *Fingerprint) add(x [4]uint64) {
	var c uint64
	for i := range f.sum {
		f.sum[i], c = bits.Add64(f.sum[i], x[i], c)
	}
}

// String is the fingerprint as 64 hex digits (big-endian).
func (f Fingerprint) String() string {
	var b [32]byte
	for i := range f.sum {
		binary.BigEndian.PutUint64(b[24-8*i:], f.sum[i])
	}
	return hex.EncodeToString(b[:])
}

func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

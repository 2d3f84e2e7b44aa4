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
// sum, modulo 2^256, of the SHA-256 of each item's canonical encoding,
// whatever the order of partitions and pages. Version 1
// (report.ItemsFingerprint1: Add) encodes every item as it is stored: two
// reads of a period give the same fingerprint exactly when they return the
// same items (keys, and the contract attributes with their types and
// exact text). Version 2 (ItemsFingerprint2: addTransaction) encodes a
// valid item as what its reports are made of, and a rejected one (which
// the rejects file shows as read) as version 1 does. The zero value is the fingerprint of no items.
//
// The canonical encoding of an item in version 1, each string as an 8-byte big-endian
// length then its bytes: "reportjob.item.v1", the partition key, the sort
// key, then for each contract attribute in the order transaction_id,
// agency_id, amount, currency, kind, commission_bps, customer_id,
// product_id, recorded_at: a byte 0 if absent, else the byte 1, the type
// ("S", "N" or "other") and the text.
type Fingerprint struct {
	sum [4]uint64 // little-endian limbs
}

// Add adds one item, in version 1.
func (f *Fingerprint) Add(it *item.Item, buf []byte) []byte {
	vals, present := it.Contract()
	return f.addContract(it.PK, it.SK, &vals, present, buf)
}

// addContract adds the item with keys pk and sk and the contract
// attributes vals and present (item.Item.Contract), in version 1.
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
	f.addHash(sha256.Sum256(buf))
	return buf
}

// v2Tag begins a version 2 encoding: the uvarint length 17 then
// "reportjob.item.v2", where a version 1 encoding begins with 8 bytes of
// length, the first 0 (the two never hash the same bytes).
const v2Tag = "\x11reportjob.item.v2"

// addTransaction adds the valid item tx, whose content fingerprint
// (item.Transaction.Fingerprint) is fp, in version 2: the SHA-256 of
// v2Tag, fp, tx's partition key and sort key (each a uvarint length then
// its bytes), and its recorded time in Unix milliseconds (8 bytes, big
// endian; two's complement before 1970). fp covers the rest of what the
// reports show of tx (id, agency, customer, product, kind, currency,
// amount in minor units, its own commission_bps), and the recorded time
// is what validation made of recorded_at (or the sort key): a rewrite of
// an attribute that changes none of these is no change. About 100 bytes,
// two SHA-256 blocks where version 1 hashes six.
func (f *Fingerprint) addTransaction(tx *item.Transaction, fp *[32]byte, buf []byte) []byte {
	buf = append(buf[:0], v2Tag...)
	buf = append(buf, fp[:]...)
	buf = binary.AppendUvarint(buf, uint64(len(tx.PK)))
	buf = append(buf, tx.PK...)
	buf = binary.AppendUvarint(buf, uint64(len(tx.SK)))
	buf = append(buf, tx.SK...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(tx.RecordedAt.UnixMilli()))
	f.addHash(sha256.Sum256(buf))
	return buf
}

func (f *Fingerprint) addHash(h [32]byte) {
	var limbs [4]uint64
	for i := range limbs {
		limbs[i] = binary.BigEndian.Uint64(h[24-8*i:])
	}
	f.add(limbs)
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

package dedupeindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

// A list generation (a level-0 run) has one of two layouts, which its
// bucket's sequence number records (bbolt keeps it in the bucket's
// header; NewClaimWriter sets it in the transaction that creates the
// bucket):
//
//   - layoutPerID (0, the sequence of a bucket never set: every list of
//     a store of format reportjob/2 or migrated from reportjob/1): one
//     key per id, <id> -> claim value or "";
//   - layoutPacked (1, written from format reportjob/3 on): the ids in
//     blocks, <last id of block> -> block, one put per block of
//     blockEntries ids (a writer's batches write whole blocks, its last
//     batch a short one). The block whose key is the first at or after an
//     id holds that id if the list does (Seek, then a binary search in
//     the block).
//
// Block layout: version 1, the entry count n (uint32, big endian), n
// offsets (uint32, big endian, from the block's start) of the entries,
// then the entries in id order: the id (uvarint length, bytes), then 0
// (no claim value: the id's claim is another period's) or 1 and the
// claim: its period start as milliseconds after the list's period start
// (varint, 0 as written), the period's length in ms plus one (uvarint; 0:
// a version 1 claim, no end), the expiry as seconds after the period
// start (varint), the fingerprint. The offsets make the binary search
// read the ids in place, without decoding the block.
const (
	layoutPerID  = 0
	layoutPacked = 1

	l0BlockVersion = 1
	l0BlockHeader  = 1 + 4
)

var errCorruptL0Block = errors.New("corrupt list block")

// packedList reports whether the list generation run is packed; an
// unknown layout is an error.
func packedList(run *bolt.Bucket) (bool, error) {
	switch s := run.Sequence(); s {
	case layoutPerID:
		return false, nil
	case layoutPacked:
		return true, nil
	default:
		return false, fmt.Errorf("list generation of unknown layout %d", s)
	}
}

// l0Block is a packed list's block, read in place (a page of the mapped
// file in a read transaction: valid until it ends).
type l0Block struct {
	b []byte
	n int
}

func openL0Block(b []byte) (l0Block, error) {
	if len(b) < l0BlockHeader || b[0] != l0BlockVersion {
		return l0Block{}, errCorruptL0Block
	}
	n := binary.BigEndian.Uint32(b[1:])
	if uint64(n) == 0 || uint64(len(b)-l0BlockHeader)/4 < uint64(n) {
		return l0Block{}, errCorruptL0Block
	}
	return l0Block{b: b, n: int(n)}, nil
}

// entry returns the id of entry i and its claim (what follows the id, up
// to the next entry), checked for its length (a cut or misplaced entry
// is an error even where only ids are read).
func (k l0Block) entry(i int) (id, rest []byte, err error) {
	off := uint64(binary.BigEndian.Uint32(k.b[l0BlockHeader+4*i:]))
	end := uint64(len(k.b))
	if i+1 < k.n {
		end = uint64(binary.BigEndian.Uint32(k.b[l0BlockHeader+4*(i+1):]))
	}
	if off < uint64(l0BlockHeader+4*k.n) || off >= end || end > uint64(len(k.b)) {
		return nil, nil, errCorruptL0Block
	}
	b := k.b[off:end]
	l, n := binary.Uvarint(b)
	if n <= 0 || l == 0 || l >= uint64(len(b)-n) {
		return nil, nil, errCorruptL0Block
	}
	id, rest = b[n:n+int(l)], b[n+int(l):]
	if claimSize(rest) != len(rest) {
		return nil, nil, errCorruptL0Block
	}
	return id, rest, nil
}

// claimSize returns the length of the claim at the start of rest (see
// claimOf) by its varints' continuation bits, -1 when it is malformed.
func claimSize(rest []byte) int {
	switch rest[0] {
	case 0:
		return 1
	case 1:
	default:
		return -1
	}
	i := 1
	for range 3 {
		j := i
		for j < len(rest) && rest[j] >= 0x80 {
			j++
		}
		if j >= len(rest) || j-i >= binary.MaxVarintLen64 {
			return -1
		}
		i = j + 1
	}
	return i + collect.FPLen
}

// claimOf decodes the claim at the start of rest (from entry) of a list
// whose period starts at start (ms); ok is false for an id without one.
func claimOf(rest []byte, start int64) (c claimValue, ok bool, err error) {
	if len(rest) == 0 {
		return c, false, errCorruptL0Block
	}
	switch rest[0] {
	case 0:
		return c, false, nil
	case 1:
	default:
		return c, false, errCorruptL0Block
	}
	b := rest[1:]
	d, n1 := binary.Varint(b)
	if n1 <= 0 {
		return c, false, errCorruptL0Block
	}
	b = b[n1:]
	length, n2 := binary.Uvarint(b)
	if n2 <= 0 {
		return c, false, errCorruptL0Block
	}
	b = b[n2:]
	exp, n3 := binary.Varint(b)
	if n3 <= 0 || len(b)-n3 != collect.FPLen {
		return c, false, errCorruptL0Block
	}
	c.period = start + d
	if length != 0 {
		c.end = c.period + int64(length-1)
	}
	c.expires = c.period/1000 + exp
	copy(c.fp[:], b[n3:])
	return c, true, nil
}

// search returns the index of the first entry whose id is at or after id
// (k.n when none is).
func (k l0Block) search(id []byte) (int, error) {
	lo, hi := 0, k.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e, _, err := k.entry(m)
		if err != nil {
			return 0, err
		}
		if bytes.Compare(e, id) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, nil
}

// l0Packer packs the ids of a list generation, given in ascending order,
// into blocks of the bucket run: one put per blockEntries ids, pages
// packed full.
type l0Packer struct {
	run   *bolt.Bucket
	start int64 // the list's period start (ms)
	offs  []uint32
	body  []byte
	last  string
}

func newL0Packer(run *bolt.Bucket, start int64) *l0Packer {
	run.FillPercent = 1
	return &l0Packer{run: run, start: start}
}

// add appends id with its claim (nil: none), and writes the block once it
// holds blockEntries ids.
func (p *l0Packer) add(id string, c *claimValue) error {
	p.offs = append(p.offs, uint32(len(p.body)))
	p.body = binary.AppendUvarint(p.body, uint64(len(id)))
	p.body = append(p.body, id...)
	if c == nil {
		p.body = append(p.body, 0)
	} else {
		p.body = append(p.body, 1)
		p.body = binary.AppendVarint(p.body, c.period-p.start)
		var length uint64
		if c.end != 0 {
			length = uint64(c.end-c.period) + 1
		}
		p.body = binary.AppendUvarint(p.body, length)
		p.body = binary.AppendVarint(p.body, c.expires-c.period/1000)
		p.body = append(p.body, c.fp[:]...)
	}
	p.last = id
	if len(p.offs) >= blockEntries {
		return p.flush()
	}
	return nil
}

// flush writes the ids pending as one block.
func (p *l0Packer) flush() error {
	if len(p.offs) == 0 {
		return nil
	}
	head := l0BlockHeader + 4*len(p.offs)
	// A new slice per block: bbolt keeps key and value until the
	// transaction ends.
	b := make([]byte, head, head+len(p.body))
	b[0] = l0BlockVersion
	binary.BigEndian.PutUint32(b[1:], uint32(len(p.offs)))
	for i, o := range p.offs {
		binary.BigEndian.PutUint32(b[l0BlockHeader+4*i:], uint32(head)+o)
	}
	b = append(b, p.body...)
	if err := p.run.Put([]byte(p.last), b); err != nil {
		return fmt.Errorf("list block %q: %w", clip(p.last), err)
	}
	p.offs, p.body = p.offs[:0], p.body[:0]
	return nil
}

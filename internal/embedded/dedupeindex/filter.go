package dedupeindex

import (
	"encoding/binary"
	"errors"

	bolt "go.etcd.io/bbolt"
)

// A run's filter: a blocked Bloom filter of the ids whose claim values the
// run holds, written by the Commit that makes the run the period's list.
// Lookup reads it in place (bbolt maps the file) and reads the run only
// for the ids it may hold; a false positive costs one bucket read. Layout:
// version 1, the number of 64-byte blocks (uint32, big endian), the
// blocks. Each id sets filterK bits of one block, chosen by FNV-1a 64 of
// the id: the hash is no defence against chosen ids, and needs none (a
// collision only costs a read).
const (
	filterVersion    = 1
	filterHeader     = 1 + 4
	filterBlockBytes = 64
	filterBitsPerID  = 10
	filterK          = 7
)

var (
	bucketFilters = []byte("filters")
	// bucketWriters lists the generations of writers that have not
	// committed (running, or failed), which Lookup reads without a filter
	// (up to their last id: see probe).
	bucketWriters = []byte("writers")
)

// idHash is FNV-1a 64 of id, mixed (MurmurHash3's finalizer) so that
// every bit depends on every byte.
func idHash[T []byte | string](id T) uint64 {
	h := uint64(14695981039346656037) // FNV-1a 64, inline: no allocation
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return fmix64(h)
}

func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// bitHashes are the two hashes whose combinations pick an id's bits in
// its block: independent of the block's choice (the high 32 bits of h).
func bitHashes(h uint64) (h1, h2 uint32) {
	m := fmix64(h ^ 0x9e3779b97f4a7c15)
	return uint32(h), uint32(m) | 1
}

// filterBlock is the block of hash h among nblocks.
func filterBlock(h uint64, nblocks uint32) uint32 {
	return uint32((uint64(uint32(h>>32)) * uint64(nblocks)) >> 32)
}

// filterBuilder builds a filter sized for n ids.
type filterBuilder struct {
	f       []byte
	nblocks uint32
}

func newFilter(n int) *filterBuilder {
	nblocks := uint32((n*filterBitsPerID + filterBlockBytes*8 - 1) / (filterBlockBytes * 8))
	f := make([]byte, filterHeader+int(nblocks)*filterBlockBytes)
	f[0] = filterVersion
	binary.BigEndian.PutUint32(f[1:], nblocks)
	return &filterBuilder{f: f, nblocks: nblocks}
}

// add sets the bits of the id of hash h.
func (b *filterBuilder) add(h uint64) {
	if b.nblocks == 0 {
		return
	}
	block := b.f[filterHeader+int(filterBlock(h, b.nblocks))*filterBlockBytes:]
	h1, h2 := bitHashes(h)
	for i := range uint32(filterK) {
		bit := (h1 + i*h2) & (filterBlockBytes*8 - 1)
		block[bit>>3] |= 1 << (bit & 7)
	}
}

func (b *filterBuilder) bytes() []byte { return b.f }

// buildFilter returns the filter of the ids with a claim value in run. It
// reads the run twice (to count, then to hash) rather than hold the
// hashes: its memory is the filter's.
func buildFilter(run *bolt.Bucket) []byte {
	n := 0
	_ = run.ForEach(func(_, v []byte) error {
		if len(v) > 0 {
			n++
		}
		return nil
	})
	fb := newFilter(n)
	_ = run.ForEach(func(k, v []byte) error {
		if len(v) > 0 {
			fb.add(idHash(k))
		}
		return nil
	})
	return fb.bytes()
}

var errCorruptFilter = errors.New("corrupt run filter")

// checkFilter reports whether f is a filter this code reads.
func checkFilter(f []byte) error {
	if len(f) < filterHeader || f[0] != filterVersion ||
		len(f) != filterHeader+int(binary.BigEndian.Uint32(f[1:]))*filterBlockBytes {
		return errCorruptFilter
	}
	return nil
}

// mayHold reports whether the run of filter f (checked) may hold a claim
// of the id of hash h.
func mayHold(f []byte, h uint64) bool {
	nblocks := binary.BigEndian.Uint32(f[1:])
	if nblocks == 0 {
		return false
	}
	block := f[filterHeader+int(filterBlock(h, nblocks))*filterBlockBytes:]
	h1, h2 := bitHashes(h)
	for i := range uint32(filterK) {
		bit := (h1 + i*h2) & (filterBlockBytes*8 - 1)
		if block[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
	}
	return true
}

// runKey is the key of generation gen of the period whose start key is
// start, in periods/<job>/filters and periods/<job>/writers.
func runKey(start []byte, gen uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), start...), gen)
}

// jobBucket returns periods/<job>/<name>, created when create is set (tx
// writable, periods/<job> there); nil when missing and not created.
func jobBucket(tx *bolt.Tx, job string, name []byte, create bool) (*bolt.Bucket, error) {
	jb := nested(tx.Bucket(bucketPeriods), []byte(job))
	if !create || jb == nil {
		return nested(jb, name), nil
	}
	return jb.CreateBucketIfNotExists(name)
}

// deleteRunKeys deletes the keys of b (filters or writers) of the period
// whose start key is start with a generation below before (all:
// ^uint64(0)).
func deleteRunKeys(b *bolt.Bucket, start []byte, before uint64) error {
	if b == nil {
		return nil
	}
	var del [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(start); k != nil && len(k) == 16 && string(k[:8]) == string(start); k, _ = c.Next() {
		if binary.BigEndian.Uint64(k[8:]) < before {
			del = append(del, append([]byte(nil), k...))
		}
	}
	for _, k := range del {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

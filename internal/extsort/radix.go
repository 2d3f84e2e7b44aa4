package extsort

import (
	"cmp"
	"math/bits"
	"slices"
)

// The buffer's index is sorted with a most-significant-digit radix sort
// (an in-place "American flag" sort, one byte a pass) on the key, then on
// the value of records with equal keys. It reads the arena about once per
// entry and 8-byte word rather than twice per comparison: a comparison sort
// over keys that share long prefixes spends its time in cache misses.
//
// While sorting, an entry's prefix holds the 8 bytes of the field being
// sorted (key, then value) from the current depth on, zero-padded. Each
// pass sorts on the first byte where a bucket's prefixes differ; once
// they agree on all 8, radixDeepen loads the next 8 from the arena.
// Fields that end within the current word come before those that go on
// (they are their prefixes), shorter first.

// radixCutoff is the size under which a bucket is left to a comparison
// sort.
const radixCutoff = 64

// radixSort sorts a by key, then value.
func (b *buffer) radixSort(a []entry) {
	b.radix(a, 0, false)
}

// radix sorts a, whose entries agree on bytes [0, depth) of their field:
// the value if val (their keys are equal), else the key.
func (b *buffer) radix(a []entry, depth int, val bool) {
	if len(a) < 2 {
		return
	}
	// Skip the bytes of the prefix that every entry shares.
	var diff uint64
	for i := range a {
		diff |= a[i].prefix ^ a[0].prefix
	}
	if diff == 0 {
		// Equal prefixes: load the next word (a cache miss an entry) rather
		// than compare whole keys (two a comparison).
		b.radixDeepen(a, depth, val)
		return
	}
	if len(a) < radixCutoff {
		// compare orders by prefix, then the whole key and value: right
		// for entries that agree on everything before their prefix.
		slices.SortFunc(a, b.compare)
		return
	}
	shift := 56 - bits.LeadingZeros64(diff)&^7 // the first byte that differs
	var count [256]int
	for i := range a {
		count[byte(a[i].prefix>>shift)]++
	}
	var next, end [256]int
	off := 0
	for d, n := range count {
		next[d] = off
		off += n
		end[d] = off
	}
	for d := range 256 {
		for next[d] < end[d] {
			e := a[next[d]]
			for dd := byte(e.prefix >> shift); int(dd) != d; dd = byte(e.prefix >> shift) {
				a[next[dd]], e = e, a[next[dd]]
				next[dd]++
			}
			a[next[d]] = e
			next[d]++
		}
	}
	off = 0
	for _, n := range count {
		if n > 1 {
			b.radixBucket(a[off:off+n], depth, val)
		}
		off += n
	}
}

// radixBucket sorts a bucket: in a goroutine of its own when it is large
// and a worker is free.
func (b *buffer) radixBucket(a []entry, depth int, val bool) {
	if p := b.par; p != nil && len(a) >= minParallelSort {
		select {
		case p.sem <- struct{}{}:
			p.wg.Go(func() {
				defer func() { <-p.sem }()
				b.radix(a, depth, val)
			})
			return
		default:
		}
	}
	b.radix(a, depth, val)
}

// radixDeepen sorts a, whose entries agree on bytes [0, depth+8) of their
// field, zero-padded.
func (b *buffer) radixDeepen(a []entry, depth int, val bool) {
	word := depth + 8
	field := func(e entry) []byte {
		if val {
			_, v := b.record(e)
			return v
		}
		return b.key(e)
	}
	// Fields that end within the word first: they are prefixes of the rest.
	i := 0
	for j := range a {
		if len(field(a[j])) <= word {
			a[i], a[j] = a[j], a[i]
			i++
		}
	}
	ended, rest := a[:i], a[i:]
	if val {
		// Whole records equal up to their values' ends: compare puts the
		// shorter values first; values of one length are equal.
		slices.SortFunc(ended, b.compare)
	} else {
		// Keys of one length are equal: sort them by value.
		slices.SortFunc(ended, func(x, y entry) int { return cmp.Compare(x.klen, y.klen) })
		for len(ended) > 0 {
			n := 1
			for n < len(ended) && ended[n].klen == ended[0].klen {
				n++
			}
			if n > 1 {
				same := ended[:n]
				for j := range same {
					_, v := b.record(same[j])
					same[j].prefix = keyPrefix(v)
				}
				b.radix(same, 0, true)
			}
			ended = ended[n:]
		}
	}
	for j := range rest {
		rest[j].prefix = keyPrefix(field(rest[j])[word:])
	}
	b.radix(rest, word, val)
}

// Package dedupeindex is the dedupe-window index (collect.Index) of the
// embedded store. It has buckets of its own in the store's bbolt file,
// beside the store's meta, items and jobs buckets, and creates them on
// first write:
//
//	periods / <job> / heads                <start> -> head value
//	periods / <job> / expiry               <expires><start> -> ""
//	periods / <job> / lists / <start> / <gen>   <last id of block> -> block
//	periods / <job> / filters              <start><gen> -> run filter
//	periods / <job> / writers              <start><gen> -> ""
//
// <start> is the period start in Unix milliseconds and <expires> the
// list's expiry in Unix seconds, each as 8 bytes that sort as the numbers
// do (big endian, sign bit flipped); <gen> is a uint64, big endian. A claim
// value is version 2, period start (ms), period end (ms), expires (s) as
// big-endian int64s, then the fingerprint; version 1 (written before
// claims recorded their period's end, still read) has no period end. A
// head value is version 1, generation, id count,
// expires (s), then a flags byte (1: being swept).
//
// A period's claims are appended to its list, as one sorted run: each
// generation bucket (one per writer) holds every id the writer added, with
// the claim value it wrote or kept (carried over from the period's older
// generations), or none when the id's claim is another period's. It is
// packed (l0block.go): one put per block of blockEntries ids, the block's
// last id its key; a list written before format reportjob/3 has one key
// per id (<id> -> claim value or ""), and the bucket's sequence number
// says which (both are read). A writer fills it in transactions of
// indexBatch ids (ascending: pages packed full); Commit switches the head
// to it, writes its filter (filter.go) and deletes every other generation
// in one transaction. A committed list with a filter is a level-0 run.
//
// Runs are merged, size-tiered (merge.go): when a level holds mergeFanIn
// runs, NewClaimWriter (after the sweep, under the lease) merges the
// oldest of them into one packed run of the next level (block.go: one put
// per block of blockEntries entries), with a filter and meta (level, entry
// count, period range):
//
//	periods / <job> / merged / <seq>        <last id of block> -> block
//	periods / <job> / mergedmeta            <seq> -> run meta, filter
//	periods / <job>                         lastgen -> the job's last generation
//
// An entry of a merged run (id, period start, generation, claim) counts
// only while its generation is its period's committed head (validity, in
// merge.go): a rebuild of the period or its sweep invalidates it without
// rewriting the run, a merge drops it, and a merged run whose periods are
// all swept goes whole. Generations are never reused within a job.
//
// Lookup reads the level-0 runs (through their filters, then Seek and a
// binary search in one block), the generations of writers that have not
// committed (listed in writers; read for the ids up to the last one
// written: a writer adds ids in ascending order, and the ids Lookup is
// asked about while a period is built are those its writer has yet to
// add) and the merged runs (filters, then Seek and a search in one block), and
// takes the valid claim of the latest period: a claim only ever moves
// from an earlier period to a later one (collect's decide). A release
// writes nothing: the claim released goes with its generation at Commit.
// The sweep drops an expired list whole, in one transaction. The expiry
// bucket lets NewClaimWriter find expired lists without reading the
// others.
//
// The by-id layout before runs (claims / <job>: <id> -> claim value, one
// random insert per claim) is migrated once by Migrate (migrate.go), which
// the embedded store runs at Open.
package dedupeindex

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

var _ collect.Index = (*Index)(nil)

// Index is the dedupe index in an open bbolt file. It is safe for
// concurrent use.
type Index struct {
	db   *bolt.DB
	path string // for messages
	mark func(tx *bolt.Tx) error
}

// MarkWrites sets a function NewClaimWriter calls in its first write
// transaction (the store records its format there). Call it before using
// ix.
func (ix *Index) MarkWrites(mark func(tx *bolt.Tx) error) { ix.mark = mark }

// New returns the index in db, the file at path (named in errors). It
// does not touch the file.
func New(db *bolt.DB, path string) *Index {
	return &Index{db: db, path: path}
}

// indexBatch is how many ids (adds, releases, or sweeps) one write
// transaction takes: large lists never make one transaction hold GBs of
// dirty pages.
var indexBatch = 10_000

// periodIDsPage is how many ids PeriodIDs reads per read transaction.
var periodIDsPage = 1000

var (
	bucketClaims  = []byte("claims")
	bucketPeriods = []byte("periods")
	bucketHeads   = []byte("heads")
	bucketExpiry  = []byte("expiry")
	bucketLists   = []byte("lists")
	keyLastGen    = []byte("lastgen")
)

const (
	indexVersion = 1
	claimV1Len   = 1 + 8 + 8 + collect.FPLen
	claimVersion = 2
	claimLen     = 1 + 8 + 8 + 8 + collect.FPLen
	headLen      = 1 + 8 + 8 + 8 + 1
	flagSweeping = 1
)

// sortable encodes v in 8 bytes that sort as v does.
func sortable(v int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v)^(1<<63))
}

func unsortable(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func genKey(gen uint64) []byte { return binary.BigEndian.AppendUint64(nil, gen) }

type claimValue struct {
	period  int64 // ms
	end     int64 // ms; 0 in a version 1 claim
	expires int64 // s
	fp      [collect.FPLen]byte
}

func (c claimValue) encode() []byte {
	b := make([]byte, 0, claimLen)
	b = append(b, claimVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.period))
	b = binary.BigEndian.AppendUint64(b, uint64(c.end))
	b = binary.BigEndian.AppendUint64(b, uint64(c.expires))
	return append(b, c.fp[:]...)
}

// decodeClaim decodes a claim value of version 2 or 1.
func decodeClaim(b []byte) (claimValue, error) {
	var c claimValue
	switch {
	case len(b) == claimLen && b[0] == claimVersion:
		c.end = int64(binary.BigEndian.Uint64(b[9:]))
		b = append(b[:9:9], b[17:]...) // the version 1 layout
	case len(b) == claimV1Len && b[0] == indexVersion:
	default:
		return claimValue{}, fmt.Errorf("corrupt claim value (%d bytes)", len(b))
	}
	c.period = int64(binary.BigEndian.Uint64(b[1:]))
	c.expires = int64(binary.BigEndian.Uint64(b[9:]))
	copy(c.fp[:], b[17:])
	return c, nil
}

// claim returns c as the claim of id.
func (c claimValue) claim(id string) collect.Claim {
	cl := collect.Claim{
		ID: id, Period: time.UnixMilli(c.period).UTC(), FP: c.fp, Expires: time.Unix(c.expires, 0).UTC(),
	}
	if c.end != 0 {
		cl.End = time.UnixMilli(c.end).UTC()
	}
	return cl
}

type headValue struct {
	gen, count uint64
	expires    int64 // s
	flags      byte
}

func (h headValue) encode() []byte {
	b := make([]byte, 0, headLen)
	b = append(b, indexVersion)
	b = binary.BigEndian.AppendUint64(b, h.gen)
	b = binary.BigEndian.AppendUint64(b, h.count)
	b = binary.BigEndian.AppendUint64(b, uint64(h.expires))
	return append(b, h.flags)
}

func decodeHead(b []byte) (headValue, error) {
	if len(b) != headLen || b[0] != indexVersion {
		return headValue{}, fmt.Errorf("corrupt period list head (%d bytes)", len(b))
	}
	return headValue{
		gen:     binary.BigEndian.Uint64(b[1:]),
		count:   binary.BigEndian.Uint64(b[9:]),
		expires: int64(binary.BigEndian.Uint64(b[17:])),
		flags:   b[25],
	}, nil
}

// jobPeriods returns periods/<job> and its heads, expiry and lists
// buckets, creating them when create is set (then tx must be writable).
// Without create, a missing bucket is nil.
func jobPeriods(tx *bolt.Tx, job string, create bool) (heads, expiry, lists *bolt.Bucket, err error) {
	if !create {
		jb := nested(tx.Bucket(bucketPeriods), []byte(job))
		if jb == nil {
			return nil, nil, nil, nil
		}
		return jb.Bucket(bucketHeads), jb.Bucket(bucketExpiry), jb.Bucket(bucketLists), nil
	}
	root, err := tx.CreateBucketIfNotExists(bucketPeriods)
	if err != nil {
		return nil, nil, nil, err
	}
	jb, err := root.CreateBucketIfNotExists([]byte(job))
	if err != nil {
		return nil, nil, nil, err
	}
	var bs [3]*bolt.Bucket
	for i, name := range [][]byte{bucketHeads, bucketExpiry, bucketLists} {
		if bs[i], err = jb.CreateBucketIfNotExists(name); err != nil {
			return nil, nil, nil, err
		}
	}
	return bs[0], bs[1], bs[2], nil
}

// nested returns b's sub-bucket name, nil when b or it is missing.
func nested(b *bolt.Bucket, name []byte) *bolt.Bucket {
	if b == nil {
		return nil
	}
	return b.Bucket(name)
}

// timeLayout is RFC 3339 with exactly three fraction digits, as the
// embedded store writes its times.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime formats t, cut to whole milliseconds, in UTC; the zero time
// is "".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return time.UnixMilli(t.UnixMilli()).UTC().Format(timeLayout)
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// Package keys computes and parses the table keys of the producer contract
// (SPEC section 2). Producers in any language can compute the same keys:
//
// Partition key (attribute quarter_hour_timestamp, S): the UTC instant the
// item is recorded, floored to 15 minutes, as "YYYYMMDDHHMM" (minutes 00,
// 15, 30 or 45), e.g. "201610230130". With N > 1 shards it is
// "YYYYMMDDHHMM#k" with k = Shard(transaction_id, N) in decimal, e.g.
// "201610230130#3".
//
// Sort key (attribute random_timestamp, S): the recorded instant truncated
// to the second, UTC, as "YYYY-MM-DDTHH:MM:SS", then ".", then 16 base58
// characters, e.g. "2016-10-23T01:30:00.7ZkKN6dce92mgcDD". The suffix is
// DerivedSuffix(transaction_id) when the producer has a transaction id (a
// retried write then overwrites the same item), else RandomSuffix().
//
// With d = SHA-256 of the UTF-8 bytes of transaction_id (32 bytes):
//
//	suffix[i] = Alphabet[d[i] mod 58]                   for i = 0..15
//	k         = uint32 big-endian of d[16..19] mod N    (k = 0 when N <= 1)
//
// In Ruby and Python (ALPHABET as above, n the shard count):
//
//	d = Digest::SHA256.digest(id).bytes                  # Ruby
//	suffix = d[0, 16].map { |b| ALPHABET[b % 58] }.join
//	k = d[16, 4].pack("C*").unpack1("N") % n
//
//	d = hashlib.sha256(id.encode("utf-8")).digest()      # Python
//	suffix = "".join(ALPHABET[b % 58] for b in d[:16])
//	k = int.from_bytes(d[16:20], "big") % n
//
// testdata/vectors.json holds vectors to check an implementation against.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Alphabet is the Bitcoin base58 alphabet, the one Ruby's
// SecureRandom.base58 uses: digits and letters without 0, O, I and l.
const Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// SuffixLen is the number of base58 characters after the "." of a sort key.
const SuffixLen = 16

// quarter is the width of one partition-key time bucket.
const quarter = 15 * time.Minute

const (
	quarterLayout = "200601021504"
	secondLayout  = "2006-01-02T15:04:05"
	sortKeyLen    = len(secondLayout) + 1 + SuffixLen
)

// ErrBadKey is wrapped by the errors of ParsePartition and ParseSortKeyTime.
var ErrBadKey = errors.New("malformed key")

// QuarterStart returns t in UTC floored to a multiple of 15 minutes.
func QuarterStart(t time.Time) time.Time {
	return t.UTC().Truncate(quarter)
}

// Quarter returns QuarterStart(t) as "YYYYMMDDHHMM".
func Quarter(t time.Time) string {
	return QuarterStart(t).Format(quarterLayout)
}

// Partition returns the partition key of an item recorded at t in shard
// shard of shards: Quarter(t) when shards <= 1, else Quarter(t) + "#" +
// the shard in decimal.
func Partition(t time.Time, shard, shards int) string {
	if shards <= 1 {
		return Quarter(t)
	}
	return Quarter(t) + "#" + strconv.Itoa(shard)
}

// ParsePartition parses a partition key: exactly 12 digits "YYYYMMDDHHMM"
// of a valid UTC time whose minutes are 00, 15, 30 or 45, optionally
// followed by "#" and a shard number in canonical decimal (no sign, no
// leading zeros). shard is 0 when there is no "#k".
func ParsePartition(pk string) (quarter time.Time, shard int, err error) {
	q, k, hasShard := strings.Cut(pk, "#")
	if len(q) != len(quarterLayout) || !allDigits(q) {
		return time.Time{}, 0, fmt.Errorf("partition key %q: want YYYYMMDDHHMM[#k]: %w", pk, ErrBadKey)
	}
	t, err := time.Parse(quarterLayout, q)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("partition key %q: %w", pk, ErrBadKey)
	}
	if t.Minute()%15 != 0 {
		return time.Time{}, 0, fmt.Errorf("partition key %q: minutes not 00, 15, 30 or 45: %w", pk, ErrBadKey)
	}
	if hasShard {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || strconv.Itoa(n) != k {
			return time.Time{}, 0, fmt.Errorf("partition key %q: bad shard %q: %w", pk, k, ErrBadKey)
		}
		shard = n
	}
	return t, shard, nil
}

// SortKey returns the sort key of an item recorded at t:
// t.UTC() truncated to the second as "YYYY-MM-DDTHH:MM:SS", ".", suffix.
func SortKey(t time.Time, suffix string) string {
	return t.UTC().Format(secondLayout) + "." + suffix
}

// ParseSortKeyTime returns the UTC second encoded at the front of a sort
// key. It is strict: exactly "YYYY-MM-DDTHH:MM:SS" of a valid time, ".",
// and SuffixLen characters of Alphabet.
func ParseSortKeyTime(sk string) (time.Time, error) {
	if len(sk) != sortKeyLen || sk[len(secondLayout)] != '.' {
		return time.Time{}, fmt.Errorf("sort key %q: want YYYY-MM-DDTHH:MM:SS.<%d base58>: %w", sk, SuffixLen, ErrBadKey)
	}
	for i := len(secondLayout) + 1; i < len(sk); i++ {
		if strings.IndexByte(Alphabet, sk[i]) < 0 {
			return time.Time{}, fmt.Errorf("sort key %q: suffix not base58: %w", sk, ErrBadKey)
		}
	}
	t, err := time.Parse(secondLayout, sk[:len(secondLayout)])
	if err != nil {
		return time.Time{}, fmt.Errorf("sort key %q: %w", sk, ErrBadKey)
	}
	return t, nil
}

// DerivedSuffix returns the sort-key suffix of a transaction id: with
// d = SHA-256(UTF-8 transactionID), suffix[i] = Alphabet[d[i] % 58] for
// i = 0..15.
func DerivedSuffix(transactionID string) string {
	d := sha256.Sum256([]byte(transactionID))
	var b [SuffixLen]byte
	for i := range b {
		b[i] = Alphabet[d[i]%58]
	}
	return string(b[:])
}

// RandomSuffix returns SuffixLen uniformly random base58 characters from
// crypto/rand (bytes >= 232 are rejected so that every character is
// equally likely), as Ruby's SecureRandom.base58(16).
func RandomSuffix() string {
	var out [SuffixLen]byte
	var buf [32]byte
	n := 0
	for n < SuffixLen {
		_, _ = rand.Read(buf[:]) // never fails since Go 1.24 (it crashes instead)
		for _, c := range buf {
			if c < 232 && n < SuffixLen { // 232 = 4*58
				out[n] = Alphabet[c%58]
				n++
			}
		}
	}
	return string(out[:])
}

// Shard returns the write shard of a transaction id among shards: 0 when
// shards <= 1, else uint32 big-endian of SHA-256(UTF-8 id)[16:20] % shards.
func Shard(transactionID string, shards int) int {
	if shards <= 1 {
		return 0
	}
	d := sha256.Sum256([]byte(transactionID))
	return int(binary.BigEndian.Uint32(d[16:20]) % uint32(shards))
}

// ForTransaction returns the keys of the item of transaction transactionID
// recorded at recordedAt with shards write shards:
// pk = Partition(recordedAt, Shard(id, shards), shards),
// sk = SortKey(recordedAt, DerivedSuffix(id)).
func ForTransaction(transactionID string, recordedAt time.Time, shards int) (pk, sk string) {
	return Partition(recordedAt, Shard(transactionID, shards), shards),
		SortKey(recordedAt, DerivedSuffix(transactionID))
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// MaxEscapedAgency is the longest escaped agency id (EscapeAgency) that
// can be delivered: "agency=" plus it must fit a 255-byte file name, and
// the whole object key S3's 1,024 bytes. An id of 128 ASCII letters fits;
// one of 128 CJK characters (9 escaped bytes each) does not.
const MaxEscapedAgency = 240

// EscapeAgency writes every byte of id outside [A-Za-z0-9._-] as %XX
// (uppercase hex), so that an agency id is one safe object key segment:
// agency=A in PREFIX/period=P/agency=A/summary.parquet.
func EscapeAgency(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// EscapedAgencyLen returns len(EscapeAgency(id)) without building it.
func EscapedAgencyLen(id string) int {
	n := len(id)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			n += 2
		}
	}
	return n
}

// UnescapeAgency reverses EscapeAgency.
func UnescapeAgency(s string) (string, error) { return url.PathUnescape(s) }

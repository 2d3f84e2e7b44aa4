package keys

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParsePartition: a partition key parses only in its canonical form
// (the key Partition writes for the time and shard it returns), and any
// other text is an error wrapping ErrBadKey, never a panic.
func FuzzParsePartition(f *testing.F) {
	for _, s := range []string{
		"201610230130", "201610230130#0", "201610230130#3", "202802290000", "202812312345#63",
		"201610230131", "201610230130#", "201610230130#03", "201610230130#-1", "201610230130#+1",
		"201610230130#99999999999999999999", "20161023013", "2016102301300", "201613010000", "201602300000",
		"201610232400", "２01610230130", "201610230130#1#2", "", "#", "-01610230130", "000001010000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pk string) {
		q, shard, err := ParsePartition(pk)
		if err != nil {
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("ParsePartition(%q) error %v does not wrap ErrBadKey", pk, err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(pk)) {
				t.Fatalf("ParsePartition(%q) error %v does not name the key", pk, err)
			}
			return
		}
		if q.Location() != time.UTC || !QuarterStart(q).Equal(q) {
			t.Fatalf("ParsePartition(%q) = %v: not a UTC quarter start", pk, q)
		}
		want := Quarter(q)
		if strings.Contains(pk, "#") {
			want += "#" + strconv.Itoa(shard)
		}
		if want != pk {
			t.Fatalf("ParsePartition(%q) = %v, %d: the canonical key is %q", pk, q, shard, want)
		}
		if strings.Contains(pk, "#") && shard > 0 && Partition(q, shard, shard+1) != pk {
			t.Fatalf("Partition(%v, %d, %d) = %q, want %q", q, shard, shard+1, Partition(q, shard, shard+1), pk)
		}
	})
}

// FuzzParseSortKeyTime: a sort key parses only when it is exactly what
// SortKey writes, and the second it returns writes it back.
func FuzzParseSortKeyTime(f *testing.F) {
	for _, s := range []string{
		"2016-10-23T01:30:00.7ZkKN6dce92mgcDD", "2028-02-29T23:59:59.1111111111111111", "2027-02-29T00:00:00.1111111111111111",
		"2016-10-23T01:30:00.0OIl111111111111", "2016-10-23T01:30:00,7ZkKN6dce92mgcDD", "2016-10-23T01:30:00.7ZkKN6dce92mgcD",
		"2016-10-23 01:30:00.7ZkKN6dce92mgcDD", "2016-10-23T24:00:00.7ZkKN6dce92mgcDD", "2016-10-23T01:30:60.7ZkKN6dce92mgcDD",
		"", "0000-01-01T00:00:00.1111111111111111", "9999-12-31T23:59:59.zzzzzzzzzzzzzzzz", "2016-10-23T01:30:00.7ZkKN6dce92mgc\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sk string) {
		at, err := ParseSortKeyTime(sk)
		if err != nil {
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("ParseSortKeyTime(%q) error %v does not wrap ErrBadKey", sk, err)
			}
			return
		}
		if at.Location() != time.UTC || at.Nanosecond() != 0 {
			t.Fatalf("ParseSortKeyTime(%q) = %v: not a UTC second", sk, at)
		}
		suffix := sk[len(sk)-SuffixLen:]
		if back := SortKey(at, suffix); back != sk {
			t.Fatalf("SortKey(ParseSortKeyTime(%q)) = %q", sk, back)
		}
		for i := 0; i < len(suffix); i++ {
			if !strings.ContainsRune(Alphabet, rune(suffix[i])) {
				t.Fatalf("suffix %q of %q is not base58", suffix, sk)
			}
		}
	})
}

// FuzzEscapeAgency: an escaped agency id is made of [A-Za-z0-9._%-] only
// (so it is one safe key segment: no "/", no NUL, no wildcard of an IAM
// pattern, no policy variable), escapes only what it must, and reads back
// to the id with url.PathUnescape and UnescapeAgency: two agencies never
// share a folder.
func FuzzEscapeAgency(f *testing.F) {
	for _, s := range []string{
		"acme", "acme2", "../x", "..", ".", "/", "/etc/passwd", "a/b", "%", "%2F", "a%2Fb", "é", "a b", "=x",
		"a\x00b", "\xff\xfe", "*", "?", "${aws:username}", "C:\\x", "agency=acme", strings.Repeat("日", 128),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		esc := EscapeAgency(id)
		for i := 0; i < len(esc); i++ {
			c := esc[i]
			safe := 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
			if !safe && c != '%' {
				t.Fatalf("EscapeAgency(%q) = %q: byte %q", id, esc, c)
			}
			if c == '%' && (i+2 >= len(esc) || !isUpperHex(esc[i+1]) || !isUpperHex(esc[i+2])) {
				t.Fatalf("EscapeAgency(%q) = %q: %% at %d not followed by two uppercase hex digits", id, esc, i)
			}
		}
		if want := 3*len(id) - 2*countSafe(id); len(esc) != want {
			t.Fatalf("EscapeAgency(%q) = %q: %d bytes, want %d (only unsafe bytes escaped)", id, esc, len(esc), want)
		}
		if back, err := url.PathUnescape(esc); err != nil || back != id {
			t.Fatalf("url.PathUnescape(%q) = %q, %v; want %q", esc, back, err, id)
		}
		if back, err := UnescapeAgency(esc); err != nil || back != id {
			t.Fatalf("UnescapeAgency(%q) = %q, %v; want %q", esc, back, err, id)
		}
	})
}

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

func countSafe(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			n++
		}
	}
	return n
}

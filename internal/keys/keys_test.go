package keys

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Vectors frozen from this implementation and checked against an
// independent Python implementation of the README formulas.
func TestForTransactionVectors(t *testing.T) {
	tests := []struct {
		id     string
		at     string
		shards int
		pk, sk string
	}{
		{"txn-0001", "2016-10-23T01:30:00Z", 1, "201610230130", "2016-10-23T01:30:00.Gxn2eXb7HZo8qqDh"},
		{"txn-0001", "2016-10-23T01:30:00Z", 0, "201610230130", "2016-10-23T01:30:00.Gxn2eXb7HZo8qqDh"},
		{"order/2024/000042", "2024-02-29T23:59:59.999Z", 4, "202402292345#1", "2024-02-29T23:59:59.D7L77tFMMeUSx2ML"},
		{"café-€-日本", "2025-12-31T00:14:07Z", 16, "202512310000#7", "2025-12-31T00:14:07.hqh491bGGeLGUNrR"},
		{"", "2016-10-23T01:30:00Z", 2, "201610230130#0", "2016-10-23T01:30:00.v3P9dMVMfLDTevCd"},
		{"a", "2016-10-23T01:44:59Z", 1000, "201610230130#328", "2016-10-23T01:44:59.VcEKVUGVKMr6fcoL"},
		// A non-UTC offset: keys are computed from the UTC instant.
		{"a", "2016-10-23T03:44:59+02:00", 1000, "201610230130#328", "2016-10-23T01:44:59.VcEKVUGVKMr6fcoL"},
	}
	for _, tt := range tests {
		pk, sk := ForTransaction(tt.id, mustTime(t, tt.at), tt.shards)
		if pk != tt.pk || sk != tt.sk {
			t.Errorf("ForTransaction(%q, %s, %d) = %q, %q; want %q, %q", tt.id, tt.at, tt.shards, pk, sk, tt.pk, tt.sk)
		}
	}
}

func TestVectorsFile(t *testing.T) {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		TransactionID string `json:"transaction_id"`
		RecordedAt    string `json:"recorded_at"`
		Shards        int    `json:"shards"`
		PK            string `json:"pk"`
		SK            string `json:"sk"`
	}
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 {
		t.Fatalf("got %d vectors, want 3", len(vs))
	}
	for _, v := range vs {
		pk, sk := ForTransaction(v.TransactionID, mustTime(t, v.RecordedAt), v.Shards)
		if pk != v.PK || sk != v.SK {
			t.Errorf("%q: got %q, %q; want %q, %q", v.TransactionID, pk, sk, v.PK, v.SK)
		}
	}
}

func TestShard(t *testing.T) {
	tests := []struct {
		id     string
		shards int
		want   int
	}{
		{"txn-0001", 1, 0}, {"txn-0001", 0, 0}, {"txn-0001", -3, 0},
		{"txn-0001", 7, 5}, {"order/2024/000042", 7, 5}, {"café-€-日本", 7, 2}, {"", 7, 0}, {"a", 7, 1},
	}
	for _, tt := range tests {
		if got := Shard(tt.id, tt.shards); got != tt.want {
			t.Errorf("Shard(%q, %d) = %d, want %d", tt.id, tt.shards, got, tt.want)
		}
	}
}

func TestQuarter(t *testing.T) {
	tests := []struct{ at, want string }{
		{"2016-10-23T01:30:00Z", "201610230130"},
		{"2016-10-23T01:44:59.999999999Z", "201610230130"},
		{"2016-10-23T01:45:00Z", "201610230145"},
		{"2016-10-23T00:00:00Z", "201610230000"},
		{"2016-10-23T23:59:59Z", "201610232345"},
		{"2016-10-23T01:10:00-05:30", "201610230630"}, // 06:40 UTC
	}
	for _, tt := range tests {
		at := mustTime(t, tt.at)
		if got := Quarter(at); got != tt.want {
			t.Errorf("Quarter(%s) = %q, want %q", tt.at, got, tt.want)
		}
		qs := QuarterStart(at)
		if qs.Location() != time.UTC || qs.After(at) || at.Sub(qs) >= 15*time.Minute {
			t.Errorf("QuarterStart(%s) = %s", tt.at, qs)
		}
		if got := Partition(at, 3, 1); got != tt.want {
			t.Errorf("Partition(%s, 3, 1) = %q, want %q", tt.at, got, tt.want)
		}
		if got := Partition(at, 3, 4); got != tt.want+"#3" {
			t.Errorf("Partition(%s, 3, 4) = %q, want %q", tt.at, got, tt.want+"#3")
		}
	}
}

func TestParsePartition(t *testing.T) {
	tests := []struct {
		pk    string
		want  string // RFC 3339, "" if an error is expected
		shard int
	}{
		{"201610230130", "2016-10-23T01:30:00Z", 0},
		{"201610230145#0", "2016-10-23T01:45:00Z", 0},
		{"202402292345#15", "2024-02-29T23:45:00Z", 15},
		{"201610230100", "2016-10-23T01:00:00Z", 0},
		{"201610230131", "", 0},    // minutes not a quarter
		{"201610230160", "", 0},    // minute 60
		{"201610232430", "", 0},    // hour 24
		{"201613230130", "", 0},    // month 13
		{"202302290000", "", 0},    // not a leap year
		{"20161023013", "", 0},     // 11 digits
		{"2016102301300", "", 0},   // 13 digits
		{"2016-10-23T01", "", 0},   // wrong layout
		{"+01610230130", "", 0},    // not digits
		{"201610230130#", "", 0},   // empty shard
		{"201610230130#01", "", 0}, // leading zero
		{"201610230130#-1", "", 0}, // negative
		{"201610230130#+1", "", 0}, // sign
		{"201610230130#1#2", "", 0},
		{"201610230130#x", "", 0},
		{"", "", 0},
	}
	for _, tt := range tests {
		q, shard, err := ParsePartition(tt.pk)
		if tt.want == "" {
			if err == nil || !errors.Is(err, ErrBadKey) {
				t.Errorf("ParsePartition(%q) = %s, %d, %v; want ErrBadKey", tt.pk, q, shard, err)
			} else if !strings.Contains(err.Error(), tt.pk) {
				t.Errorf("ParsePartition(%q) error %q does not name the key", tt.pk, err)
			}
			continue
		}
		if err != nil || !q.Equal(mustTime(t, tt.want)) || q.Location() != time.UTC || shard != tt.shard {
			t.Errorf("ParsePartition(%q) = %s, %d, %v; want %s, %d", tt.pk, q, shard, err, tt.want, tt.shard)
		}
	}
}

func TestParseSortKeyTime(t *testing.T) {
	tests := []struct {
		sk   string
		want string // "" if an error is expected
	}{
		{"2016-10-23T01:30:00.7ZkKN6dce92mgcDD", "2016-10-23T01:30:00Z"}, // seed 001's example
		{"2024-02-29T23:59:59.D7L77tFMMeUSx2ML", "2024-02-29T23:59:59Z"},
		{"2016-10-23T01:30:00.7ZkKN6dce92mgcD", ""},   // 15 chars
		{"2016-10-23T01:30:00.7ZkKN6dce92mgcDDx", ""}, // 17 chars
		{"2016-10-23T01:30:00.7ZkKN6dce92mgc0D", ""},  // '0' not base58
		{"2016-10-23T01:30:00.7ZkKN6dce92mgcOD", ""},  // 'O' not base58
		{"2016-10-23T01:30:00.7ZkKN6dce92mgcID", ""},  // 'I'
		{"2016-10-23T01:30:00.7ZkKN6dce92mgclD", ""},  // 'l'
		{"2016-10-23T01:30:00x7ZkKN6dce92mgcDD", ""},  // no '.'
		{"2016-10-23 01:30:00.7ZkKN6dce92mgcDD", ""},  // space for T
		{"2016-10-23T25:30:00.7ZkKN6dce92mgcDD", ""},  // hour 25
		{"2016-02-30T01:30:00.7ZkKN6dce92mgcDD", ""},  // Feb 30
		{"2016-10-23T01:30:00Z7ZkKN6dce92mgcDD", ""},  // Z
		{"2016-10-23T01:30:0.07ZkKN6dce92mgcDDD", ""}, // misplaced '.'
		{"2016-10-23T01:30:00.123", ""},               // RFC 3339 fraction
		{"", ""},
	}
	for _, tt := range tests {
		got, err := ParseSortKeyTime(tt.sk)
		if tt.want == "" {
			if !errors.Is(err, ErrBadKey) {
				t.Errorf("ParseSortKeyTime(%q) = %s, %v; want ErrBadKey", tt.sk, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(mustTime(t, tt.want)) || got.Location() != time.UTC {
			t.Errorf("ParseSortKeyTime(%q) = %s, %v; want %s", tt.sk, got, err, tt.want)
		}
	}
}

func TestSortKeyRoundTrip(t *testing.T) {
	at := mustTime(t, "2016-10-23T03:30:00.987+02:00")
	sk := SortKey(at, "7ZkKN6dce92mgcDD")
	if want := "2016-10-23T01:30:00.7ZkKN6dce92mgcDD"; sk != want {
		t.Fatalf("SortKey = %q, want %q", sk, want)
	}
	got, err := ParseSortKeyTime(sk)
	if err != nil || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("ParseSortKeyTime(%q) = %s, %v", sk, got, err)
	}
}

func TestRandomSuffix(t *testing.T) {
	const n = 2000
	seen := make(map[string]bool, n)
	counts := make(map[rune]int)
	for i := 0; i < n; i++ {
		s := RandomSuffix()
		if len(s) != SuffixLen {
			t.Fatalf("RandomSuffix() = %q, len %d", s, len(s))
		}
		if _, err := ParseSortKeyTime("2016-10-23T01:30:00." + s); err != nil {
			t.Fatalf("RandomSuffix() = %q: %v", s, err)
		}
		if seen[s] {
			t.Fatalf("RandomSuffix() repeated %q", s)
		}
		seen[s] = true
		for _, r := range s {
			counts[r]++
		}
	}
	// 32000 characters over 58 symbols: about 552 each (sd 23).
	if len(counts) != len(Alphabet) {
		t.Errorf("saw %d distinct characters, want %d", len(counts), len(Alphabet))
	}
	for r, c := range counts {
		if c < 432 || c > 672 {
			t.Errorf("character %q seen %d times, want about 552", r, c)
		}
	}
	// A biased generator (b % 58 without rejection) draws the first 24
	// characters with probability 5/256 instead of 1/58: about 15000
	// of them instead of 13241 (sd 88). Allow +-500.
	first := 0
	for _, r := range Alphabet[:24] {
		first += counts[r]
	}
	if first < 13241-500 || first > 13241+500 {
		t.Errorf("first 24 characters seen %d times, want about 13241: biased", first)
	}
}

func TestDerivedSuffixAlphabet(t *testing.T) {
	if len(Alphabet) != 58 || strings.ContainsAny(Alphabet, "0OIl") {
		t.Fatalf("bad alphabet %q", Alphabet)
	}
	for _, id := range []string{"", "x", "txn-0001", strings.Repeat("z", 1000)} {
		s := DerivedSuffix(id)
		if _, err := ParseSortKeyTime("2016-10-23T01:30:00." + s); err != nil {
			t.Errorf("DerivedSuffix(%q) = %q: %v", id, s, err)
		}
		if DerivedSuffix(id) != s {
			t.Errorf("DerivedSuffix(%q) not deterministic", id)
		}
	}
}

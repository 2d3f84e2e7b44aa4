package extsort

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

type rec struct{ k, v string }

func (r rec) String() string { return fmt.Sprintf("%q=%q", r.k, r.v) }

func compareRec(a, b rec) int { return cmp.Or(strings.Compare(a.k, b.k), strings.Compare(a.v, b.v)) }

// drain reads an iterator to its end, copying every record.
func drain(t *testing.T, it *Iterator) []rec {
	t.Helper()
	var out []rec
	for it.Next() {
		out = append(out, rec{string(it.Key()), string(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return out
}

// runFiles lists the sorter's files in dir.
func runFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// settle waits for the spill in flight, so that every full buffer is a
// finished run file.
func settle(t *testing.T, s *Sorter) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitSpillLocked(); err != nil {
		t.Fatalf("spill: %v", err)
	}
}

// sortRecs adds recs to a new sorter in dir with mem bytes, from workers
// goroutines, and returns what the iterator yields with the sorter's stats.
// It checks that Close leaves dir empty.
func sortRecs(t *testing.T, dir string, mem, workers int, recs []rec) ([]rec, Stats) {
	t.Helper()
	s := New(Options{Dir: dir, MemBytes: mem})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(recs); i += workers {
				if err := s.Add([]byte(recs[i].k), []byte(recs[i].v)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return finishSort(t, s, dir, errs)
}

// finishSort fails t on any error from errs (the adds'), then sorts s,
// drains it, closes it and checks that dir is left empty.
func finishSort(t *testing.T, s *Sorter, dir string, errs <-chan error) ([]rec, Stats) {
	t.Helper()
	for err := range errs {
		t.Fatalf("add: %v", err)
	}
	it, err := s.Sort()
	if err != nil {
		t.Fatalf("sort: %v", err)
	}
	got := drain(t, it)
	st := s.Stats()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if left := runFiles(t, dir); len(left) > 0 {
		t.Fatalf("files left after Close: %v", left)
	}
	return got, st
}

func TestSortCases(t *testing.T) {
	tests := []struct {
		name string
		in   []rec
		want []rec
	}{
		{name: "empty"},
		{name: "one record", in: []rec{{"k", "v"}}, want: []rec{{"k", "v"}}},
		{
			name: "duplicates kept",
			in:   []rec{{"a", "1"}, {"b", "2"}, {"a", "1"}, {"a", "1"}},
			want: []rec{{"a", "1"}, {"a", "1"}, {"a", "1"}, {"b", "2"}},
		},
		{
			name: "ties on key ordered by value",
			in:   []rec{{"k", "c"}, {"k", "a"}, {"k", ""}, {"k", "b"}, {"j", "z"}},
			want: []rec{{"j", "z"}, {"k", ""}, {"k", "a"}, {"k", "b"}, {"k", "c"}},
		},
		{
			name: "keys prefixes of each other",
			in: []rec{
				{"abcdefghij", "1"}, {"abc", "2"}, {"abcdefgh", "3"}, {"abcdefghi", "4"},
				{"a", "5"}, {"abcdefg", "6"}, {"abcdefgh\x00", "7"}, {"abc\x00", "8"},
			},
			want: []rec{
				{"a", "5"}, {"abc", "2"}, {"abc\x00", "8"}, {"abcdefg", "6"}, {"abcdefgh", "3"},
				{"abcdefgh\x00", "7"}, {"abcdefghi", "4"}, {"abcdefghij", "1"},
			},
		},
		{
			name: "empty keys and values",
			in:   []rec{{"", "x"}, {"b", ""}, {"", ""}, {"a", ""}, {"", ""}},
			want: []rec{{"", ""}, {"", ""}, {"", "x"}, {"a", ""}, {"b", ""}},
		},
		{
			name: "binary bytes",
			in: []rec{
				{"\xff", "\x00"}, {"\x00", "\xff"}, {"\x00\x00", ""}, {"\x00", "\x00"},
				{"\xff\xff\xff\xff\xff\xff\xff\xff\xff", "a"}, {"\xff\xff\xff\xff\xff\xff\xff\xff", "b"},
				{"\x7f", "\x80"}, {"\x80", "\x7f"},
			},
			want: []rec{
				{"\x00", "\x00"}, {"\x00", "\xff"}, {"\x00\x00", ""}, {"\x7f", "\x80"}, {"\x80", "\x7f"},
				{"\xff", "\x00"}, {"\xff\xff\xff\xff\xff\xff\xff\xff", "b"},
				{"\xff\xff\xff\xff\xff\xff\xff\xff\xff", "a"},
			},
		},
	}
	// MemBytes 1 spills every record to its own run and merges in passes;
	// the default sorts in memory.
	for _, mem := range []int{0, 1, 64} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/mem=%d", tt.name, mem), func(t *testing.T) {
				got, st := sortRecs(t, t.TempDir(), mem, 1, tt.in)
				if !slices.Equal(got, tt.want) {
					t.Errorf("got  %v\nwant %v", got, tt.want)
				}
				if st.Records != int64(len(tt.in)) {
					t.Errorf("Stats.Records = %d, want %d", st.Records, len(tt.in))
				}
				if mem == 0 && st.Runs != 0 {
					t.Errorf("in-memory sort spilled %d runs", st.Runs)
				}
				if mem == 1 && len(tt.in) > 1 && st.Runs != int64(len(tt.in)) {
					t.Errorf("Stats.Runs = %d, want one run a record (%d)", st.Runs, len(tt.in))
				}
			})
		}
	}
}

// randomRecs makes n records from a small alphabet, so that keys tie,
// repeat and prefix each other, with 0x00 and 0xff among the bytes.
func randomRecs(seed uint64, n, maxKey, maxVal int) []rec {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0x7f, 0x80, 0xfe, 0xff}
	str := func(max int) string {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	recs := make([]rec, n)
	for i := range recs {
		if i > 0 && r.IntN(10) == 0 {
			recs[i] = recs[r.IntN(i)] // an exact duplicate
			continue
		}
		recs[i] = rec{str(maxKey), str(maxVal)}
	}
	return recs
}

func TestSortMatchesReference(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		recs := randomRecs(seed, 20000, 12, 40)
		want := slices.Clone(recs)
		slices.SortFunc(want, compareRec)
		var size int
		for _, r := range recs {
			size += recHeader + entrySize + len(r.k) + len(r.v)
		}
		for _, tc := range []struct {
			mem        int
			n          int  // records used, 0 for all
			spill      bool // must spill
			mergedRuns bool // must need merge passes (more runs than MinFanIn)
		}{
			{mem: 1 << 30},
			{mem: 4 * size}, // fits half the budget: in memory
			{mem: size / 2, spill: true},
			{mem: 8 << 10, spill: true, mergedRuns: true},
			{mem: 300, n: 2000, spill: true, mergedRuns: true}, // ~4 records a run
		} {
			recs, want := recs, want
			if tc.n > 0 {
				recs = recs[:tc.n]
				want = slices.Clone(recs)
				slices.SortFunc(want, compareRec)
			}
			for _, workers := range []int{1, 4} {
				t.Run(fmt.Sprintf("seed=%d/mem=%d/workers=%d", seed, tc.mem, workers), func(t *testing.T) {
					got, st := sortRecs(t, t.TempDir(), tc.mem, workers, recs)
					if !slices.Equal(got, want) {
						t.Fatalf("output differs from the reference sort (got %d records, want %d)", len(got), len(want))
					}
					if st.Records != int64(len(recs)) {
						t.Errorf("Stats.Records = %d, want %d", st.Records, len(recs))
					}
					if tc.spill != (st.Runs > 0) {
						t.Errorf("Stats.Runs = %d, want spilling %v", st.Runs, tc.spill)
					}
					if (st.Runs > 0) != (st.SpilledBytes > 0) {
						t.Errorf("Stats.Runs = %d but SpilledBytes = %d", st.Runs, st.SpilledBytes)
					}
					if tc.mergedRuns != (st.MergedRuns > 0) {
						t.Errorf("Stats.MergedRuns = %d, want merge passes %v", st.MergedRuns, tc.mergedRuns)
					}
				})
			}
		}
	}
}

// TestSortLargeRecords covers records bigger than a chunk, a block and
// the buffer budget.
func TestSortLargeRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var recs []rec
	for i := range 40 {
		n := r.IntN(300 << 10)
		if i%5 == 0 {
			n = 200 << 10
		}
		v := make([]byte, n)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		recs = append(recs, rec{fmt.Sprintf("k%02d", r.IntN(10)), string(v)})
		recs = append(recs, rec{fmt.Sprintf("k%02d", r.IntN(10)), "small"})
	}
	want := slices.Clone(recs)
	slices.SortFunc(want, compareRec)
	for _, mem := range []int{0, 256 << 10, 1} {
		t.Run(fmt.Sprintf("mem=%d", mem), func(t *testing.T) {
			got, _ := sortRecs(t, t.TempDir(), mem, 2, recs)
			if !slices.Equal(got, want) {
				t.Fatalf("output differs from the reference sort")
			}
		})
	}
}

func TestBufferReuseAfterOversizedRecord(t *testing.T) {
	// A buffer that held an oversized record is reused for small ones:
	// their positions must stay within a chunk.
	b := newBuffer(1 << 20)
	b.add([]byte("big"), make([]byte, 3*chunkSize))
	b.reset()
	for i := range 3000 {
		b.add(fmt.Appendf(nil, "key%05d", i), make([]byte, 60))
	}
	b.sort(1)
	for i, e := range b.index {
		k, v := b.record(e)
		if want := fmt.Sprintf("key%05d", i); string(k) != want || len(v) != 60 {
			t.Fatalf("record %d = %q (%d-byte value), want %q", i, k, len(v), want)
		}
	}
}

func TestKeyPrefixOrder(t *testing.T) {
	keys := [][]byte{
		nil, {0}, {0, 0}, {0, 1}, {1}, []byte("abcdefgh"), []byte("abcdefgh\x00"),
		[]byte("abcdefgi"), {0xff}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	}
	for _, a := range keys {
		for _, b := range keys {
			pa, pb := keyPrefix(a), keyPrefix(b)
			if pa < pb && string(a) >= string(b) || pa > pb && string(a) <= string(b) {
				t.Errorf("keyPrefix(%q)=%#x, keyPrefix(%q)=%#x disagree with the byte order", a, pa, b, pb)
			}
		}
	}
}

func TestLifecycleErrors(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir})
	if err := s.Add([]byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add([]byte("b"), nil); !errors.Is(err, ErrSorted) {
		t.Errorf("Add after Sort: %v, want ErrSorted", err)
	}
	if _, err := s.Sort(); !errors.Is(err, ErrSorted) {
		t.Errorf("second Sort: %v, want ErrSorted", err)
	}
	if got := drain(t, it); !slices.Equal(got, []rec{{"a", ""}}) {
		t.Errorf("got %v", got)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if err := s.Add([]byte("c"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Sort(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sort after Close: %v, want ErrClosed", err)
	}
	if it.Next() || it.Err() != nil {
		t.Errorf("finished iterator after Close: Next true or Err %v", it.Err())
	}
}

func TestRunFileMode(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir, MemBytes: 1})
	defer s.Close()
	for i := range 3 {
		if err := s.Add([]byte{byte(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, s)
	files := runFiles(t, dir)
	if len(files) == 0 {
		t.Fatal("no run file")
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || !strings.HasPrefix(fi.Name(), "extsort-") {
			t.Errorf("run file %s mode %v, want extsort-* 0600", fi.Name(), fi.Mode())
		}
	}
}

func TestConcurrentAddAndClose(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir, MemBytes: 4 << 10})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				err := s.Add(fmt.Appendf(nil, "%d-%d", w, i), make([]byte, 50))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
			}
		})
	}
	for s.Stats().Runs < 5 { // let the adders spill a few runs
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if left := runFiles(t, dir); len(left) > 0 {
		t.Fatalf("files left after Close: %v", left)
	}
}

// TestBufferSort checks the radix sort of a buffer against a comparison
// sort, on keys built to reach every path: long shared prefixes, lengths
// around the 8-byte words, keys that are prefixes of others, and
// duplicates.
func TestBufferSort(t *testing.T) {
	gens := map[string]func(r *rand.Rand) string{
		"random": func(r *rand.Rand) string {
			b := make([]byte, r.IntN(30))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return string(b)
		},
		"shared prefix": func(r *rand.Rand) string {
			return fmt.Sprintf("agency-%06d\x00EUR\x00%x", r.IntN(50), r.IntN(1000))
		},
		"word boundaries": func(r *rand.Rand) string {
			n := []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 25}[r.IntN(10)]
			return strings.Repeat("\x00", r.IntN(2)) + strings.Repeat("a", n) + strings.Repeat("\x00", r.IntN(3))
		},
		"few keys": func(r *rand.Rand) string {
			return []string{"", "k", "key-0000", "key-00001", "key-0000\x00"}[r.IntN(5)]
		},
		"two bytes": func(r *rand.Rand) string {
			return string([]byte{byte(r.IntN(3)), byte(r.IntN(3))})[:r.IntN(3)]
		},
	}
	for name, gen := range gens {
		for _, n := range []int{10, 100, 5000, 100000} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(n), 3))
				b := newBuffer(1 << 30)
				var want []rec
				for range n {
					// Values with shared prefixes and lengths around the
					// words, for records with equal keys.
					v := strings.Repeat("v", []int{0, 1, 8, 9, 16}[r.IntN(5)]) + fmt.Sprint(r.IntN(5))[:r.IntN(2)]
					rc := rec{gen(r), v}
					want = append(want, rc)
					b.add([]byte(rc.k), []byte(rc.v))
				}
				slices.SortFunc(want, compareRec)
				for _, workers := range []int{1, 2, 3} {
					if workers > 1 {
						b.index = slices.Clone(b.index) // unsort: shuffle
						r.Shuffle(len(b.index), func(i, j int) { b.index[i], b.index[j] = b.index[j], b.index[i] })
						for i := range b.index {
							b.index[i].prefix = keyPrefix(b.key(b.index[i]))
						}
					}
					b.sort(workers)
					var got []rec
					for _, e := range b.index {
						k, v := b.record(e)
						got = append(got, rec{string(k), string(v)})
					}
					if !slices.Equal(got, want) {
						t.Fatalf("workers=%d: buffer sort differs from the reference", workers)
					}
				}
			})
		}
	}
}

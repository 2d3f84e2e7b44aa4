package extsort

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// writeRun writes recs, in the given order, as a run file in dir.
func writeRun(t *testing.T, dir string, recs []rec) runFile {
	t.Helper()
	var stop atomic.Bool
	var written atomic.Int64
	w, err := createRun(dir, &stop, &written)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.add([]byte(r.k), []byte(r.v)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := w.finish()
	if err != nil {
		t.Fatal(err)
	}
	if f.size != written.Load() {
		t.Fatalf("run size %d, written counter %d", f.size, written.Load())
	}
	return f
}

// readRun reads a run file to its end.
func readRun(name string) ([]rec, error) {
	r, err := openRun(name)
	if err != nil {
		return nil, err
	}
	defer r.close()
	var out []rec
	for {
		k, v, err := r.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec{string(k), string(v)})
	}
}

func multiBlockRecs() []rec {
	var recs []rec
	for i := range 300 {
		recs = append(recs, rec{fmt.Sprintf("key%04d", i), strings.Repeat(string(rune('a'+i%26)), 700)})
	}
	return recs
}

func TestRunRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		recs []rec
	}{
		{"no records", nil},
		{"empty key and value", []rec{{"", ""}}},
		{"several blocks", multiBlockRecs()},
		{"record over a block", []rec{{"a", strings.Repeat("x", 3*blockTarget)}, {"b", "y"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := writeRun(t, t.TempDir(), tt.recs)
			got, err := readRun(f.name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.recs) {
				t.Errorf("read back %d records, wrote %d, or they differ", len(got), len(tt.recs))
			}
			if f.records != int64(len(tt.recs)) {
				t.Errorf("runFile.records = %d, want %d", f.records, len(tt.recs))
			}
		})
	}
}

// blockEnds returns the offsets just past each block of a run file.
func blockEnds(t *testing.T, data []byte) []int {
	t.Helper()
	var ends []int
	off := len(runMagic)
	for {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 {
			return ends
		}
		off += blockHeader + n
		ends = append(ends, off)
	}
}

func TestRunCorruption(t *testing.T) {
	recs := multiBlockRecs()
	setCount := func(d []byte, n uint64) {
		tr := d[len(d)-trailerLen:]
		binary.LittleEndian.PutUint64(tr[blockHeader:], n)
		binary.LittleEndian.PutUint32(tr[4:], crc32.Checksum(tr[blockHeader:], castagnoli))
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, d []byte) []byte
		late   bool // found only at the trailer, after records of later blocks
	}{
		{name: "empty file", mutate: func(t *testing.T, d []byte) []byte { return d[:0] }},
		{name: "cut in magic", mutate: func(t *testing.T, d []byte) []byte { return d[:3] }},
		{name: "magic only", mutate: func(t *testing.T, d []byte) []byte { return d[:len(runMagic)] }},
		{name: "bad magic", mutate: func(t *testing.T, d []byte) []byte { d[1] ^= 1; return d }},
		{name: "cut in block header", mutate: func(t *testing.T, d []byte) []byte { return d[:len(runMagic)+5] }},
		{name: "cut in first block", mutate: func(t *testing.T, d []byte) []byte { return d[:len(runMagic)+blockHeader+1000] }},
		{name: "cut at a block boundary", mutate: func(t *testing.T, d []byte) []byte { return d[:blockEnds(t, d)[1]] }},
		{name: "trailer missing", mutate: func(t *testing.T, d []byte) []byte { return d[:len(d)-trailerLen] }},
		{name: "cut in trailer", mutate: func(t *testing.T, d []byte) []byte { return d[:len(d)-3] }},
		{name: "payload byte flipped", mutate: func(t *testing.T, d []byte) []byte { d[blockEnds(t, d)[0]+100] ^= 0x10; return d }},
		{name: "checksum changed", mutate: func(t *testing.T, d []byte) []byte { d[len(runMagic)+4]++; return d }},
		{name: "block length grown", mutate: func(t *testing.T, d []byte) []byte { d[len(runMagic)]++; return d }},
		{name: "block length huge", mutate: func(t *testing.T, d []byte) []byte {
			binary.LittleEndian.PutUint32(d[len(runMagic):], 0xffffffff)
			return d
		}},
		{name: "block dropped", mutate: func(t *testing.T, d []byte) []byte {
			e := blockEnds(t, d)
			return append(d[:e[0]:e[0]], d[e[1]:]...)
		}, late: true},
		{name: "trailer count changed", mutate: func(t *testing.T, d []byte) []byte { d[len(d)-1] ^= 1; return d }},
		{name: "trailer count off by one, checksum fixed", mutate: func(t *testing.T, d []byte) []byte {
			setCount(d, uint64(len(recs)+1))
			return d
		}},
		{name: "data after the trailer", mutate: func(t *testing.T, d []byte) []byte { return append(d, 0) }},
		{name: "bad record length in a valid block", mutate: func(t *testing.T, d []byte) []byte {
			// A block whose payload is a lone 0xff (an unfinished uvarint),
			// with a correct checksum.
			off := len(runMagic)
			blk := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff}
			binary.LittleEndian.PutUint32(blk[4:], crc32.Checksum(blk[8:], castagnoli))
			return append(append(d[:off:off], blk...), d[off:]...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := writeRun(t, t.TempDir(), recs)
			data, err := os.ReadFile(f.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.name, tt.mutate(t, data), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readRun(f.name)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read %d records, error %v, want ErrCorrupt", len(got), err)
			}
			if !strings.Contains(err.Error(), f.name) {
				t.Errorf("error %q does not name the run file", err)
			}
			if !tt.late && !slices.Equal(got, recs[:len(got)]) {
				t.Errorf("records before the error differ from those written")
			}
		})
	}
}

// TestSorterReportsCorruptRun damages a finished run before Sort: the
// error must come out of Sort or the iterator, naming the file, whether
// the run is merged directly or in a merge pass.
func TestSorterReportsCorruptRun(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mem    int
		mutate func([]byte) []byte
	}{
		{"truncated, final merge", 64 << 10, func(d []byte) []byte { return d[:len(d)/2] }},
		{"trailer cut, final merge", 64 << 10, func(d []byte) []byte { return d[:len(d)-1] }},
		{"byte flipped, final merge", 64 << 10, func(d []byte) []byte { d[len(d)/2] ^= 0x40; return d }},
		{"truncated, merge pass", 4 << 10, func(d []byte) []byte { return d[:len(d)/2] }},
		{"byte flipped, merge pass", 4 << 10, func(d []byte) []byte { d[len(d)/2] ^= 0x40; return d }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(Options{Dir: dir, MemBytes: tt.mem})
			defer s.Close()
			for i := range 2000 {
				if err := s.Add(fmt.Appendf(nil, "%08d", (i*7919)%2000), make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			settle(t, s)
			files := runFiles(t, dir)
			if len(files) < 2 {
				t.Fatalf("%d run files, want several", len(files))
			}
			victim := files[0]
			data, err := os.ReadFile(victim)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(victim, tt.mutate(data), 0o600); err != nil {
				t.Fatal(err)
			}
			it, err := s.Sort()
			n := 0
			if err == nil {
				for it.Next() {
					n++
				}
				err = it.Err()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("after %d records: error %v, want ErrCorrupt", n, err)
			}
			if !strings.Contains(err.Error(), filepath.Base(victim)) {
				t.Errorf("error %q does not name %s", err, victim)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if left := runFiles(t, dir); len(left) > 0 {
				t.Fatalf("files left after Close: %v", left)
			}
		})
	}
}

package encode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// TestMemFile: a file of a period's Writer stays in memory up to its
// limit and goes to a temp file past it, with the same bytes, size and
// hash either way; Discard removes the temp file.
func TestMemFile(t *testing.T) {
	const limit = 1000
	for _, size := range []int{0, 1, 999, 1000, 1001, 5000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			want := make([]byte, size)
			r := rand.New(rand.NewPCG(1, uint64(size)))
			for i := range want {
				want[i] = byte(r.UintN(256))
			}
			tf := newMemFile(dir, limit)
			for rest := want; len(rest) > 0; {
				n := min(len(rest), 1+int(r.UintN(300)))
				if _, err := tf.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			f, err := tf.finish("p/", "x", "csv", TypeCSV, 1)
			if err != nil {
				t.Fatal(err)
			}
			got := f.Data
			if inMem := size <= limit; inMem != (f.Path == "") {
				t.Fatalf("%d bytes: path %q, want in memory %v", size, f.Path, inMem)
			}
			if f.Path != "" {
				if got, err = os.ReadFile(f.Path); err != nil {
					t.Fatal(err)
				}
			}
			sum := sha256.Sum256(want)
			if !bytes.Equal(got, want) || f.Bytes != int64(size) || f.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("file of %d bytes, %d, sha %s: want %d bytes, sha %x", len(got), f.Bytes, f.SHA256, size, sum)
			}
			f.Discard()
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("after Discard the folder holds %d files", len(ents))
			}
		})
	}
	// Discarded unfinished, spilled or not: nothing stays.
	dir := t.TempDir()
	for _, n := range []int{10, 2 * limit} {
		tf := newMemFile(dir, limit)
		if _, err := tf.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		tf.discard()
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("after discard the folder holds %d files", len(ents))
	}
}

package extsort

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestAddBatchMatchesReference adds records from concurrent goroutines,
// each in batches of its own size (1, 7, 100, 5000 records), or one by one
// with Add, mixed: the output is the reference sort, whatever the
// batches, buffers filling in the middle of a batch included.
func TestAddBatchMatchesReference(t *testing.T) {
	recs := randomRecs(11, 20000, 12, 40)
	want := slices.Clone(recs)
	slices.SortFunc(want, compareRec)
	for _, mem := range []int{1 << 30, 64 << 10, 300} {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("mem=%d/workers=%d", mem, workers), func(t *testing.T) {
				recs := recs
				if mem == 300 { // ~4 records a run: keep the run count sane
					recs = recs[:2000]
				}
				want := slices.Clone(recs)
				slices.SortFunc(want, compareRec)
				dir := t.TempDir()
				s := New(Options{Dir: dir, MemBytes: mem})
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					size := []int{7, 100, 1, 5000}[w%4] // workers=1: batches of 7
					wg.Go(func() {
						var b Batch
						for i := w; i < len(recs); i += workers {
							if workers > 1 && i%(3*workers) == w { // every third record with Add
								if err := s.Add([]byte(recs[i].k), []byte(recs[i].v)); err != nil {
									errs <- err
									return
								}
								continue
							}
							if err := b.Add([]byte(recs[i].k), []byte(recs[i].v)); err != nil {
								errs <- err
								return
							}
							if b.Len() == size {
								if err := s.AddBatch(&b); err != nil {
									errs <- err
									return
								}
								if b.Len() != 0 {
									errs <- fmt.Errorf("batch holds %d records after AddBatch", b.Len())
									return
								}
							}
						}
						if err := s.AddBatch(&b); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				got, st := finishSort(t, s, dir, errs)
				if !slices.Equal(got, want) {
					t.Fatalf("output differs from the reference sort (got %d records, want %d)", len(got), len(want))
				}
				if st.Records != int64(len(recs)) {
					t.Errorf("Stats.Records = %d, want %d", st.Records, len(recs))
				}
				if mem < 1<<20 && st.Runs == 0 {
					t.Errorf("no run spilled with a %d-byte budget", mem)
				}
			})
		}
	}
}

func TestAddBatchLifecycle(t *testing.T) {
	s := New(Options{Dir: t.TempDir()})
	var b Batch
	if err := s.AddBatch(&b); err != nil { // empty: nothing to do
		t.Fatalf("empty AddBatch: %v", err)
	}
	for _, k := range []string{"b", "a", "b"} {
		if err := b.Add([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddBatch(&b); err != nil {
		t.Fatal(err)
	}
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add([]byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddBatch(&b); !errors.Is(err, ErrSorted) {
		t.Errorf("AddBatch after Sort: %v, want ErrSorted", err)
	}
	if b.Len() != 0 {
		t.Errorf("batch holds %d records after a failed AddBatch", b.Len())
	}
	if got, want := drain(t, it), []rec{{"a", "va"}, {"b", "vb"}, {"b", "vb"}}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if st := s.Stats(); st.Records != 3 {
		t.Errorf("Stats.Records = %d, want 3", st.Records)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Add([]byte("d"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddBatch(&b); !errors.Is(err, ErrClosed) {
		t.Errorf("AddBatch after Close: %v, want ErrClosed", err)
	}
}

// TestAddBatchSpillFails: a spill that cannot create its run file fails
// an AddBatch (this one or a later one), and the error sticks for Add,
// AddBatch and Sort.
func TestAddBatchSpillFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	s := New(Options{Dir: dir, MemBytes: 16 << 10})
	defer s.Close()
	var b Batch
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		if err := b.Add(fmt.Appendf(nil, "key-%08d", (i*7919)%1000), make([]byte, 140)); err != nil {
			t.Fatal(err)
		}
		if b.Len() == 10 {
			err = s.AddBatch(&b)
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("AddBatch: %v, want ErrNotExist", err)
	}
	if err := b.Add([]byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddBatch(&b); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("AddBatch after a failed spill: %v, want the spill's error", err)
	}
	if err := s.Add([]byte("x"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Add after a failed spill: %v, want the spill's error", err)
	}
	if _, err := s.Sort(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sort after a failed spill: %v, want the spill's error", err)
	}
}

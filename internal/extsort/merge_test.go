package extsort

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// sliceSource serves records from a slice.
type sliceSource struct {
	recs   []rec
	closed bool
}

func (s *sliceSource) next() (key, value []byte, err error) {
	if len(s.recs) == 0 {
		return nil, nil, io.EOF
	}
	r := s.recs[0]
	s.recs = s.recs[1:]
	return []byte(r.k), []byte(r.v), nil
}

func (s *sliceSource) close() error {
	s.closed = true
	return nil
}

func TestMerger(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, k := range []int{0, 1, 2, 3, 5, 8, 17, 64, 129} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			var want []rec
			srcs := make([]source, k)
			var all []*sliceSource
			for i := range srcs {
				var recs []rec
				for range r.IntN(50) * (i % 3) { // a third of the sources empty
					recs = append(recs, rec{fmt.Sprint(r.IntN(100)), fmt.Sprint(r.IntN(3))})
				}
				slices.SortFunc(recs, compareRec)
				want = append(want, recs...)
				s := &sliceSource{recs: recs}
				all = append(all, s)
				srcs[i] = s
			}
			slices.SortFunc(want, compareRec)
			m, err := newMerger(srcs)
			if err != nil {
				t.Fatal(err)
			}
			var got []rec
			for m.next() {
				got = append(got, rec{string(m.key()), string(m.value())})
			}
			if m.err != nil {
				t.Fatal(m.err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("merged %d records, differing from the %d expected", len(got), len(want))
			}
			for i, s := range all {
				if !s.closed {
					t.Errorf("source %d not closed at its end", i)
				}
			}
		})
	}
}

package collect

import (
	"fmt"
	"iter"
)

// MergeIDs merges id sequences, each in ascending byte order, into one in
// ascending byte order with each id once (for ClaimWriter.Previous, which
// merges a period's lists). It pulls one id ahead from each sequence; the
// first error any of them yields is yielded and ends the merge. A sequence
// out of order is an error.
func MergeIDs(seqs ...iter.Seq2[string, error]) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		type head struct {
			next func() (string, error, bool)
			id   string
			ok   bool
		}
		heads := make([]*head, 0, len(seqs))
		var stops []func()
		defer func() {
			for _, stop := range stops {
				stop()
			}
		}()
		advance := func(h *head) error {
			prev, had := h.id, h.ok
			id, err, ok := h.next()
			if err != nil {
				return err
			}
			if ok && had && id <= prev {
				return fmt.Errorf("merge id lists: %q after %q, want ascending", id, prev)
			}
			h.id, h.ok = id, ok
			return nil
		}
		for _, s := range seqs {
			next, stop := iter.Pull2(s)
			stops = append(stops, stop)
			h := &head{next: next}
			if err := advance(h); err != nil {
				yield("", err)
				return
			}
			heads = append(heads, h)
		}
		for {
			var least *head
			for _, h := range heads {
				if h.ok && (least == nil || h.id < least.id) {
					least = h
				}
			}
			if least == nil {
				return
			}
			id := least.id
			if !yield(id, nil) {
				return
			}
			for _, h := range heads {
				if h.ok && h.id == id {
					if err := advance(h); err != nil {
						yield("", err)
						return
					}
				}
			}
		}
	}
}

package dedupeindex

import (
	"fmt"
	"iter"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

// Previous implements collect.ClaimWriter: the committed list (PeriodIDs)
// merged with the generation buckets of the writers that never committed,
// as NewClaimWriter found them. Each is read periodIDsPage ids per read
// transaction.
func (w *claimWriter) Previous() iter.Seq2[string, error] {
	seqs := []iter.Seq2[string, error]{w.ix.PeriodIDs(w.ctx, w.job, w.period)}
	for _, g := range w.failed {
		seqs = append(seqs, w.failedIDs(g))
	}
	return collect.MergeIDs(seqs...)
}

// failedIDs yields the ids of generation gen, a writer's that never
// committed, in ascending order.
func (w *claimWriter) failedIDs(gen uint64) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var (
			after []byte
			page  []string
		)
		for {
			if err := w.ctx.Err(); err != nil {
				yield("", w.failedErr(gen, err))
				return
			}
			more := false
			page = page[:0]
			err := w.ix.db.View(func(tx *bolt.Tx) error {
				_, _, lists, _ := jobPeriods(tx, w.job, false)
				b := nested(nested(lists, w.start), genKey(gen))
				if b == nil {
					return fmt.Errorf("list deleted by another writer while it was read")
				}
				var err error
				page, more, err = readPage(b, after, page)
				return err
			})
			if err != nil {
				yield("", w.failedErr(gen, err))
				return
			}
			for _, id := range page {
				if !yield(id, nil) {
					return
				}
			}
			if !more {
				return
			}
			after = []byte(page[len(page)-1])
		}
	}
}

func (w *claimWriter) failedErr(gen uint64, err error) error {
	return fmt.Errorf("ids of failed writer %d of job %q period %s in %s: %w", gen, w.job, formatTime(w.period), w.ix.path, err)
}

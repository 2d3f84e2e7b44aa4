package dedupeindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
)

// PeriodIDs implements collect.Index. It reads periodIDsPage ids per read
// transaction and yields them outside it (so that the caller may write
// meanwhile). A list being swept counts as absent; a list replaced while
// it is read is an error.
func (ix *Index) PeriodIDs(ctx context.Context, job string, period time.Time) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		fail := func(err error) {
			yield("", fmt.Errorf("period ids of job %q period %s in %s: %w", job, formatTime(period), ix.path, err))
		}
		if err := collect.CheckJob(job); err != nil {
			fail(err)
			return
		}
		start := sortable(period.UnixMilli())
		var (
			gen      uint64
			count, n uint64
			after    []byte
			page     []string
		)
		for {
			if err := ctx.Err(); err != nil {
				fail(err)
				return
			}
			page = page[:0]
			more := false
			err := ix.db.View(func(tx *bolt.Tx) error {
				heads, _, lists, _ := jobPeriods(tx, job, false)
				var v []byte
				if heads != nil {
					v = heads.Get(start)
				}
				if v == nil {
					if gen != 0 {
						return errors.New("list removed while it was read")
					}
					return nil
				}
				h, err := decodeHead(v)
				if err != nil {
					return err
				}
				switch {
				case gen == 0 && h.flags&flagSweeping != 0:
					return nil
				case gen == 0:
					gen, count = h.gen, h.count
				case h.gen != gen || h.flags&flagSweeping != 0:
					return fmt.Errorf("list replaced or swept while it was read (generation %d, was %d)", h.gen, gen)
				}
				b := nested(nested(lists, start), genKey(gen))
				if b == nil {
					return fmt.Errorf("generation %d of the list is missing", gen)
				}
				page, more, err = readPage(b, after, page)
				return err
			})
			if err != nil {
				fail(err)
				return
			}
			for _, id := range page {
				n++
				if !yield(id, nil) {
					return
				}
			}
			if !more {
				break
			}
			after = []byte(page[len(page)-1])
		}
		if n != count {
			fail(fmt.Errorf("list of generation %d has %d ids, its head says %d", gen, n, count))
		}
	}
}

package dedupeindex

import (
	"bytes"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ixPerIDLayout rewrites every list generation of job's period starting
// at period in the per-id layout (one key per id: the lists of a store of
// format reportjob/2), as the code before packed lists wrote them.
func ixPerIDLayout(t *testing.T, s *Index, job string, period time.Time) {
	t.Helper()
	start := sortable(period.UnixMilli())
	err := s.db.Update(func(tx *bolt.Tx) error {
		_, _, lists, _ := jobPeriods(tx, job, false)
		gens := lists.Bucket(start)
		var names [][]byte
		_ = gens.ForEachBucket(func(k []byte) error {
			names = append(names, bytes.Clone(k))
			return nil
		})
		for _, g := range names {
			type kv struct{ k, v []byte }
			var kvs []kv
			lc, err := newListCursor(gens.Bucket(g), period.UnixMilli())
			if err != nil {
				return err
			}
			for ok := lc.first(); ok; ok = lc.next() {
				c, has, err := lc.claim()
				if err != nil {
					return err
				}
				e := kv{k: bytes.Clone(lc.id), v: []byte{}}
				if has {
					e.v = c.encode()
				}
				kvs = append(kvs, e)
			}
			if lc.err != nil {
				return lc.err
			}
			if err := gens.DeleteBucket(g); err != nil {
				return err
			}
			b, err := gens.CreateBucket(g)
			if err != nil {
				return err
			}
			for _, e := range kvs {
				if err := b.Put(e.k, e.v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

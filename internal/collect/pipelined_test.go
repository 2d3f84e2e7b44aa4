package collect

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/reportjob/reportjob/internal/item"
)

// pagesSource serves n pages of one item each (SK "0", "1", ...), reusing
// its page slice as a store may, and records how many it served.
type pagesSource struct {
	n      int
	served int
	err    error // returned after the last page
}

func (s *pagesSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	page := make([]item.Item, 1)
	for i := range s.n {
		if err := ctx.Err(); err != nil {
			return err
		}
		page[0] = item.Item{PK: pk, SK: fmt.Sprint(i)}
		s.served++
		if err := fn(page); err != nil {
			return err
		}
	}
	return s.err
}

// TestQueryPipelined: pages reach fn in order, whole, although the source
// reuses its slice; the first error of fn stops the Query and is the one
// returned; a Query error is returned.
func TestQueryPipelined(t *testing.T) {
	ctx := context.Background()
	t.Run("order", func(t *testing.T) {
		src := &pagesSource{n: 100}
		var got []string
		err := queryPipelined(ctx, src, "p", func(pg []item.Item) error {
			for _, it := range pg {
				got = append(got, it.SK)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, sk := range got {
			if sk != fmt.Sprint(i) {
				t.Fatalf("page %d has SK %q, want %d (got %v)", i, sk, i, got)
			}
		}
		if len(got) != 100 {
			t.Fatalf("got %d pages, want 100", len(got))
		}
	})
	t.Run("fn error stops the query", func(t *testing.T) {
		src := &pagesSource{n: 1000}
		boom := errors.New("boom")
		calls := 0
		err := queryPipelined(ctx, src, "p", func(pg []item.Item) error {
			calls++
			if pg[0].SK == "3" {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if calls != 4 {
			t.Errorf("fn called %d times, want 4 (none after its error)", calls)
		}
		if src.served > 4+pagesAhead+2 {
			t.Errorf("the source served %d pages after fn failed at the 4th", src.served)
		}
	})
	t.Run("query error", func(t *testing.T) {
		bad := errors.New("read failed")
		src := &pagesSource{n: 5, err: bad}
		calls := 0
		err := queryPipelined(ctx, src, "p", func([]item.Item) error { calls++; return nil })
		if !errors.Is(err, bad) {
			t.Fatalf("err = %v, want the query's", err)
		}
		if calls != 5 {
			t.Errorf("fn called %d times, want 5", calls)
		}
	})
}

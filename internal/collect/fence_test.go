package collect_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
	"github.com/reportjob/reportjob/internal/dynamodb/dedupeindex"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// fencedIndex is an Index whose claim writers count what they are given
// after the lease is lost (lost is set at the lostAt-th Add).
type fencedIndex struct {
	collect.Index
	lost      atomic.Bool
	lostAt    int64
	adds      atomic.Int64
	afterLost atomic.Int64
	commits   atomic.Int64
}

func (x *fencedIndex) NewClaimWriter(ctx context.Context, job string, period report.Period, expires, now time.Time) (collect.ClaimWriter, error) {
	cw, err := x.Index.NewClaimWriter(ctx, job, period, expires, now)
	if err != nil {
		return nil, err
	}
	return &fencedWriter{ClaimWriter: cw, x: x}, nil
}

type fencedWriter struct {
	collect.ClaimWriter
	x *fencedIndex
}

func (w *fencedWriter) Add(id string, fp [collect.FPLen]byte, write bool) error {
	if w.x.lost.Load() {
		w.x.afterLost.Add(1)
	}
	if w.x.adds.Add(1) == w.x.lostAt {
		w.x.lost.Store(true)
	}
	return w.ClaimWriter.Add(id, fp, write)
}

func (w *fencedWriter) Release(id string) error {
	if w.x.lost.Load() {
		w.x.afterLost.Add(1)
	}
	return w.ClaimWriter.Release(id)
}

func (w *fencedWriter) Commit() error {
	w.x.commits.Add(1)
	return w.ClaimWriter.Commit()
}

// TestClaimsFencedPerClaim: a run whose lease is lost in the middle of a
// period's claims (stopped past its lease, as the overlap suite's SIGSTOP
// does) writes no further claim and commits none. Before the fix, the
// fence was checked only before the claims started and before their
// commit, and every claim in between was written.
func TestClaimsFencedPerClaim(t *testing.T) {
	s := openStore(t)
	var items []item.Item
	for i := range 300 {
		items = append(items, tx(fmt.Sprintf("id-%03d", i), "a", 100, p10.Start.Add(time.Duration(i)*time.Second)))
	}
	put(t, s, items...)
	ctx := context.Background()
	c, err := collect.Read(ctx, collect.Config{Concurrency: 2, Dir: t.TempDir()}, s, p10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	x := &fencedIndex{Index: s, lostAt: 150}
	fence := func() error {
		if x.lost.Load() {
			return checkpoint.ErrLeaseLost
		}
		return nil
	}
	_, err = c.Dedupe(ctx, collect.DedupeOptions{Job: "job", Index: x, Window: week, Write: true, Fence: fence, Now: p10.End},
		func(*item.Transaction) error { return nil })
	if !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Dedupe: %v, want ErrLeaseLost", err)
	}
	if n := x.afterLost.Load(); n != 0 {
		t.Errorf("%d claims written after the lease was lost", n)
	}
	if n := x.commits.Load(); n != 0 {
		t.Errorf("claims committed after the lease was lost")
	}
}

// TestClaimsOfAFailedRunReleased: a run stopped in the middle of a
// period's claims (here its lease is lost after the first batch of claims
// reached the store) leaves claims that no committed list names. When an
// item it claimed is then deleted, the rerun of the period does not bill
// it, and its claim must not make a later identical copy a duplicate of a
// billing that never happened.
//
// Before the fix (issue 15, suspected point) the rerun released only the
// ids of the period's last committed list, so the failed run's claim of
// id-00000 stayed and the copy in the next period was dropped.
func TestClaimsOfAFailedRunReleased(t *testing.T) {
	for _, store := range []string{"embedded", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			s := openStore(t)
			var index collect.Index = s
			if store == "dynamodb" {
				index = dynamoIndex(t) // skips without DynamoDB Local
			}
			testClaimsOfAFailedRunReleased(t, s, index)
		})
	}
}

// dynamoIndex returns the DynamoDB dedupe index on a fresh state table of
// DynamoDB Local, or skips the test.
func dynamoIndex(t *testing.T) collect.Index {
	api := ddbtest.Client(t)
	log := slog.New(slog.DiscardHandler)
	b := &batch.Retrier{API: api, Deadline: 2 * time.Minute, RetryBase: 50 * time.Millisecond,
		RetryCap: 5 * time.Second, Concurrency: 4, Logger: log}
	return dedupeindex.New(api, ddbtest.StateTable(t), b, log)
}

func testClaimsOfAFailedRunReleased(t *testing.T, s *embedded.Store, index collect.Index) {
	const n = 10_100 // past the embedded index's batch of 10,000 claims
	var items []item.Item
	for i := range n {
		items = append(items, tx(fmt.Sprintf("id-%05d", i), "a", 100, p10.Start.Add(time.Duration(i%3600)*time.Second)))
	}
	put(t, s, items...)
	ctx := context.Background()
	c, err := collect.Read(ctx, collect.Config{Concurrency: 2, Dir: t.TempDir()}, s, p10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	x := &fencedIndex{Index: index, lostAt: n - 10}
	fence := func() error {
		if x.lost.Load() {
			return checkpoint.ErrLeaseLost
		}
		return nil
	}
	_, err = c.Dedupe(ctx, collect.DedupeOptions{Job: "job", Index: x, Window: week, Write: true, Fence: fence, Now: p10.End},
		func(*item.Transaction) error { return nil })
	if !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Dedupe: %v, want ErrLeaseLost", err)
	}
	// The producer deletes id-00000; the period is rerun; the identical
	// transaction comes again in the next hour.
	pk, sk := keys.ForTransaction("id-00000", p10.Start, 1)
	if err := s.DeleteItem(ctx, pk, sk); err != nil {
		t.Fatal(err)
	}
	if o := run(t, s, p10, index, true); len(o.billed) != n-1 {
		t.Fatalf("the rerun billed %d, want %d", len(o.billed), n-1)
	}
	put(t, s, tx("id-00000", "a", 100, p11.Start))
	if o := run(t, s, p11, index, true); !slices.Equal(o.billed, []string{"id-00000"}) {
		t.Errorf("the next hour billed %v (duplicates across periods %d), want id-00000: the failed run's claim counts as a billing",
			o.billed, o.stats.DuplicatesAcrossPeriods)
	}
}

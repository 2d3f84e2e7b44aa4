package report_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// The job-level tests run report.Job on a real embedded store and a real
// folder sink, with a fake lease clock (Job.Clock) and report clock
// (RunOptions.Now). The only fake is a Source wrapper that holds a Build
// at a chosen partition: a stall at an exact step no server can produce.

const jobName = "billing"

var day0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func at(h, m int) time.Time {
	return day0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

func openStore(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newSink(t *testing.T) *filesink.Sink {
	t.Helper()
	sk, err := filesink.New(filepath.Join(t.TempDir(), "reports"))
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// putHourly writes n valid purchases in each hour of [from, to).
func putHourly(t *testing.T, st *embedded.Store, from, to time.Time, n int) int {
	t.Helper()
	var items []item.Item
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("tx-%s-%d", h.Format("0215"), i)
			rec := h.Add(time.Duration(i*7) * time.Minute)
			pk, sk := keys.ForTransaction(id, rec, 1)
			items = append(items, item.Item{PK: pk, SK: sk, Attrs: map[string]item.Value{
				item.AttrTransactionID: item.S(id),
				item.AttrAgencyID:      item.S(fmt.Sprintf("agency-%d", i%3)),
				item.AttrAmount:        item.N("19.99"),
				item.AttrCurrency:      item.S("USD"),
			}})
		}
	}
	if err := st.PutItems(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return len(items)
}

// clock is a settable fake clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// holdSource passes queries to a Source, except that a Query of partition
// pk first says so on entered and waits until release is closed (or its
// context ends).
type holdSource struct {
	report.Source
	pk      string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHoldSource(src report.Source, pk string) *holdSource {
	return &holdSource{Source: src, pk: pk, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	if pk == h.pk {
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Source.Query(ctx, pk, after, fn)
}

// slowSource delays every Query by d.
type slowSource struct {
	report.Source
	d time.Duration
}

func (s slowSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Source.Query(ctx, pk, after, fn)
}

func newJob(owner string, src report.Source, sk report.Sink, cps checkpoint.Store, clk func() time.Time) *report.Job {
	log := slog.New(slog.DiscardHandler)
	return &report.Job{
		Name: jobName, Period: time.Hour, Lateness: 2 * time.Minute, Start: day0, MaxPeriods: 96,
		Builder:     report.NewBuilder(report.Config{Job: jobName, Concurrency: 2, DefaultBPS: 1000}, src, sk, log),
		Checkpoints: cps, Owner: owner, LeaseTTL: time.Minute, Clock: clk, Log: log,
	}
}

func load(t *testing.T, cps checkpoint.Store) checkpoint.State {
	t.Helper()
	st, err := cps.Load(context.Background(), jobName)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func manifestStarts(ms []*report.Manifest) []time.Time {
	var out []time.Time
	for _, m := range ms {
		out = append(out, m.PeriodStart)
	}
	return out
}

// TestLeaseStallFencing drives checkpoint.Store directly: holder A stalls
// past its lease's expiry, B takes over and commits; A, whose own clock
// says its lease is still good, can neither commit nor renew.
func TestLeaseStallFencing(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	t0 := at(10, 0)

	a, err := st.Acquire(ctx, jobName, "A", t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, jobName, a, t0.Add(time.Second), time.Time{}, at(1, 0)); err != nil {
		t.Fatalf("A's first commit: %v", err)
	}
	// B cannot take an unexpired lease: it is told who holds it.
	_, err = st.Acquire(ctx, jobName, "B", t0.Add(30*time.Second), time.Minute)
	var held *checkpoint.HeldError
	if !errors.As(err, &held) || held.Owner != "A" || !held.Expires.Equal(t0.Add(time.Minute)) {
		t.Fatalf("B's Acquire before expiry = %v, want a HeldError naming A until %s", err, t0.Add(time.Minute))
	}
	// A stalls; at t0+2m its lease has expired: B takes over and commits.
	b, err := st.Acquire(ctx, jobName, "B", t0.Add(2*time.Minute), time.Minute)
	if err != nil {
		t.Fatalf("B's Acquire after expiry: %v", err)
	}
	if b.Token <= a.Token {
		t.Fatalf("B's token %d is not after A's %d", b.Token, a.Token)
	}
	if err := st.Commit(ctx, jobName, b, t0.Add(2*time.Minute), at(1, 0), at(2, 0)); err != nil {
		t.Fatalf("B's commit: %v", err)
	}
	// A wakes up. By its own clock (t0+40s) the lease is still good, and
	// it believes the checkpoint is where it left it: fenced anyway.
	for _, now := range []time.Time{t0.Add(40 * time.Second), t0.Add(3 * time.Minute)} {
		err := st.Commit(ctx, jobName, a, now, at(1, 0), at(2, 0))
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Errorf("A's Commit at %s = %v, want ErrLeaseLost", now.Format(time.TimeOnly), err)
		}
		// Even when it read the checkpoint B left.
		err = st.Commit(ctx, jobName, a, now, at(2, 0), at(3, 0))
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Errorf("A's Commit from B's checkpoint at %s = %v, want ErrLeaseLost", now.Format(time.TimeOnly), err)
		}
		if _, err := st.Renew(ctx, jobName, a, now, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Errorf("A's Renew at %s = %v, want ErrLeaseLost", now.Format(time.TimeOnly), err)
		}
	}
	// A's Release does not end B's lease.
	if err := st.Release(ctx, jobName, a); err != nil {
		t.Fatal(err)
	}
	got := load(t, st)
	if !got.Checkpoint.Equal(at(2, 0)) || got.Lease.Owner != "B" || !got.Lease.Held(t0.Add(2*time.Minute)) {
		t.Fatalf("state = %+v, want checkpoint 02:00 and B's lease held", got)
	}
	// B cannot move the checkpoint backwards, nor from a stale value.
	if err := st.Commit(ctx, jobName, b, t0.Add(2*time.Minute), at(2, 0), at(1, 0)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("backwards Commit = %v, want ErrConflict", err)
	}
	if err := st.Commit(ctx, jobName, b, t0.Add(2*time.Minute), at(1, 0), at(3, 0)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("Commit from a stale checkpoint = %v, want ErrConflict", err)
	}
	if got := load(t, st).Checkpoint; !got.Equal(at(2, 0)) {
		t.Fatalf("checkpoint = %s, want 02:00", got)
	}
}

// TestRunStalledHolderCannotCommit: run A stalls inside its first period's
// Build past its lease's expiry; run B takes over and delivers everything;
// when A wakes up and finishes building, its Commit is fenced off and the
// checkpoint stays B's.
func TestRunStalledHolderCannotCommit(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	sk := newSink(t)
	putHourly(t, st, at(0, 0), at(3, 0), 4)
	t0 := at(10, 0)
	now := at(3, 2) // 00:00, 01:00, 02:00 due

	hold := newHoldSource(st, keys.Quarter(at(0, 30)))
	a := newJob("A", hold, sk, st, newClock(t0).Now)
	type outcome struct {
		res report.Result
		err error
	}
	aDone := make(chan outcome, 1)
	go func() {
		res, err := a.Run(ctx, report.RunOptions{Now: now})
		aDone <- outcome{res, err}
	}()
	select {
	case <-hold.entered:
	case o := <-aDone:
		t.Fatalf("A finished before it was held: %+v, %v", o.res, o.err)
	case <-time.After(10 * time.Second):
		t.Fatal("A never reached the held partition")
	}

	b := newJob("B", st, sk, st, newClock(t0.Add(2*time.Minute)).Now)
	resB, err := b.Run(ctx, report.RunOptions{Now: now})
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if len(resB.Periods) != 3 || !resB.Checkpoint.Equal(at(3, 0)) {
		t.Fatalf("B built %v, checkpoint %s; want 3 periods to 03:00", manifestStarts(resB.Periods), resB.Checkpoint)
	}

	close(hold.release)
	var o outcome
	select {
	case o = <-aDone:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not return after it was released")
	}
	if !errors.Is(o.err, checkpoint.ErrLeaseLost) {
		t.Fatalf("A's Run = %v, want ErrLeaseLost", o.err)
	}
	if len(o.res.Periods) != 1 || !o.res.Checkpoint.IsZero() {
		t.Errorf("A: built %v, checkpoint %s; want the one period built, no checkpoint moved", manifestStarts(o.res.Periods), o.res.Checkpoint)
	}
	if o.res.PeriodsRemaining != 3 {
		t.Errorf("A: periods remaining %d, want 3 (the uncommitted one and the two after it)", o.res.PeriodsRemaining)
	}
	got := load(t, st)
	if !got.Checkpoint.Equal(at(3, 0)) {
		t.Fatalf("checkpoint = %s, want B's 03:00", got.Checkpoint)
	}
	if got.Lease.Owner != "B" || got.Lease.Token != resB.Lease.Token {
		t.Errorf("lease = %+v, want B's last (token %d): A's release must not touch it", got.Lease, resB.Lease.Token)
	}
}

// TestRunLeaseLostWhileBuilding: the renewal goroutine finds the lease
// taken over while a period is being built, cancels the build, and the run
// says why.
func TestRunLeaseLostWhileBuilding(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	putHourly(t, st, at(0, 0), at(2, 0), 2)
	t0 := at(10, 0)

	hold := newHoldSource(st, keys.Quarter(at(0, 15)))
	defer close(hold.release)
	clk := newClock(t0)
	a := newJob("A", hold, report.Discard{}, st, clk.Now)
	a.LeaseTTL = 150 * time.Millisecond // renewed every 50 ms
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, report.RunOptions{Now: at(2, 2)})
		aDone <- err
	}()
	<-hold.entered
	// A's clock jumps past its expiry; B takes over.
	clk.Set(t0.Add(time.Minute))
	if _, err := st.Acquire(ctx, jobName, "B", t0.Add(time.Minute), time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-aDone:
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Fatalf("A's Run = %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("A kept building after its lease was lost")
	}
	if got := load(t, st); !got.Checkpoint.IsZero() || got.Lease.Owner != "B" {
		t.Fatalf("state = %+v, want no checkpoint and B's lease", got)
	}
}

// TestRunRenewsLease: a run that takes longer than the lease TTL keeps its
// lease by renewing it, and commits.
func TestRunRenewsLease(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	putHourly(t, st, at(0, 0), at(2, 0), 2)
	j := newJob("A", slowSource{st, 60 * time.Millisecond}, report.Discard{}, st, time.Now)
	j.Builder = report.NewBuilder(report.Config{Job: jobName, Concurrency: 1}, slowSource{st, 60 * time.Millisecond},
		report.Discard{}, slog.New(slog.DiscardHandler))
	j.LeaseTTL = 150 * time.Millisecond // each period takes 4 x 60 ms > TTL
	res, err := j.Run(ctx, report.RunOptions{Now: at(2, 2)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Periods) != 2 || !res.Checkpoint.Equal(at(2, 0)) {
		t.Fatalf("built %v, checkpoint %s; want 2 periods to 02:00", manifestStarts(res.Periods), res.Checkpoint)
	}
	got := load(t, st)
	if got.Lease.Owner != "A" || got.Lease.Held(time.Now()) {
		t.Errorf("lease after the run = %+v, want A's, released", got.Lease)
	}
}

// TestRunCatchUp: after a day of downtime, runs process the due periods
// oldest first, at most MaxPeriods each, and say how many remain, until
// they have caught up.
func TestRunCatchUp(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	sk := newSink(t)
	want := putHourly(t, st, at(0, 0), at(24, 0), 2)
	// An earlier run delivered up to 00:00; the job was then down a day.
	l, err := st.Acquire(ctx, jobName, "earlier", at(0, 2), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, jobName, l, at(0, 2), time.Time{}, at(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, jobName, l); err != nil {
		t.Fatal(err)
	}

	now := at(24, 2)
	clk := newClock(now)
	next := at(0, 0)
	var runs []int
	var transactions int64
	for i := 0; i < 10; i++ {
		j := newJob(fmt.Sprintf("run-%d", i), st, sk, st, clk.Now)
		j.MaxPeriods = 5
		var progress []time.Time
		res, err := j.Run(ctx, report.RunOptions{Now: now, Progress: func(i, n int, p report.Period) {
			if n != 5 && n != 4 {
				t.Errorf("progress says %d periods this run", n)
			}
			progress = append(progress, p.Start)
		}})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if len(res.Periods) == 0 {
			if res.PeriodsRemaining != 0 {
				t.Errorf("run %d: nothing built but %d remaining", i, res.PeriodsRemaining)
			}
			break
		}
		runs = append(runs, len(res.Periods))
		for k, m := range res.Periods {
			if !m.PeriodStart.Equal(next) || !m.PeriodEnd.Equal(next.Add(time.Hour)) || !progress[k].Equal(next) {
				t.Fatalf("run %d period %d is %s (progress %s), want %s", i, k, m.PeriodStart, progress[k], next)
			}
			transactions += m.Transactions
			next = m.PeriodEnd
		}
		if !res.Checkpoint.Equal(next) || !load(t, st).Checkpoint.Equal(next) {
			t.Fatalf("run %d: checkpoint %s (stored %s), want %s", i, res.Checkpoint, load(t, st).Checkpoint, next)
		}
		if wantLeft := int(at(24, 0).Sub(next) / time.Hour); res.PeriodsRemaining != wantLeft {
			t.Errorf("run %d: %d periods remaining, want %d", i, res.PeriodsRemaining, wantLeft)
		}
		clk.Set(clk.Now().Add(time.Second))
	}
	if fmt.Sprint(runs) != "[5 5 5 5 4]" {
		t.Errorf("periods per run = %v, want [5 5 5 5 4]", runs)
	}
	if !next.Equal(at(24, 0)) || transactions != int64(want) {
		t.Errorf("caught up to %s with %d transactions, want %s and %d", next, transactions, at(24, 0), want)
	}
	infos, err := sk.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	manifests := 0
	for _, o := range infos {
		if filepath.Base(o.Key) == "manifest.json" {
			manifests++
		}
	}
	if manifests != 24 {
		t.Errorf("%d manifests in the sink, want 24", manifests)
	}
}

// TestRunStop: closing Stop ends the run after the period in progress,
// which is committed; the rest are counted as remaining.
func TestRunStop(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	j := newJob("A", st, report.Discard{}, st, newClock(at(10, 0)).Now)
	stop := make(chan struct{})
	res, err := j.Run(ctx, report.RunOptions{Now: at(6, 2), Stop: stop, Progress: func(i, n int, p report.Period) {
		if i == 1 {
			close(stop) // SIGTERM while the second period is being built
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Periods) != 2 || !res.Checkpoint.Equal(at(2, 0)) || res.PeriodsRemaining != 4 {
		t.Fatalf("built %v, checkpoint %s, %d remaining; want 2 periods, 02:00, 4", manifestStarts(res.Periods), res.Checkpoint, res.PeriodsRemaining)
	}
	if got := load(t, st); !got.Checkpoint.Equal(at(2, 0)) || got.Lease.Held(at(10, 0)) {
		t.Fatalf("state = %+v, want checkpoint 02:00 and the lease released", got)
	}
}

// TestRunLeaseHeld: a run finding the lease held builds nothing.
func TestRunLeaseHeld(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	t0 := at(10, 0)
	if _, err := st.Acquire(ctx, jobName, "other", t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []report.RunOptions{
		{Now: at(3, 2)},
		{Now: at(3, 2), Backfill: true, From: at(0, 0), To: at(2, 0)},
	} {
		j := newJob("A", st, report.Discard{}, st, newClock(t0.Add(30*time.Second)).Now)
		res, err := j.Run(ctx, opts)
		var held *checkpoint.HeldError
		if !errors.As(err, &held) || held.Owner != "other" {
			t.Fatalf("Run(backfill %v) = %v, want a HeldError naming other", opts.Backfill, err)
		}
		if len(res.Periods) != 0 {
			t.Errorf("built %d periods without the lease", len(res.Periods))
		}
	}
}

// TestRunBackfill: backfill rebuilds [From, To) whatever the checkpoint,
// never moves it, takes the lease, and refuses bad ranges.
func TestRunBackfill(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	sk := newSink(t)
	putHourly(t, st, at(0, 0), at(6, 0), 3)
	clk := newClock(at(10, 0))
	j := newJob("A", st, sk, st, clk.Now)
	j.MaxPeriods = 3
	if _, err := j.Run(ctx, report.RunOptions{Now: at(6, 2)}); err != nil {
		t.Fatal(err)
	}
	if got := load(t, st).Checkpoint; !got.Equal(at(3, 0)) {
		t.Fatalf("checkpoint = %s, want 03:00", got)
	}

	for _, r := range []struct{ from, to time.Time }{
		{at(0, 0), at(2, 0)}, // behind the checkpoint
		{at(2, 0), at(5, 0)}, // across it
		{at(4, 0), at(6, 0)}, // ahead of it
	} {
		var leaseSeen checkpoint.Lease
		res, err := j.Run(ctx, report.RunOptions{Now: at(6, 2), Backfill: true, From: r.from, To: r.to,
			Progress: func(i, n int, p report.Period) { leaseSeen = load(t, st).Lease }})
		if err != nil {
			t.Fatalf("backfill %s..%s: %v", r.from, r.to, err)
		}
		if n := int(r.to.Sub(r.from) / time.Hour); len(res.Periods) != n || !res.Periods[0].PeriodStart.Equal(r.from) {
			t.Errorf("backfill %s..%s built %v", r.from, r.to, manifestStarts(res.Periods))
		}
		if leaseSeen.Owner != "A" || !leaseSeen.Held(clk.Now()) {
			t.Errorf("backfill %s..%s ran without holding the lease: %+v", r.from, r.to, leaseSeen)
		}
		if got := load(t, st).Checkpoint; !got.Equal(at(3, 0)) {
			t.Fatalf("backfill %s..%s moved the checkpoint to %s", r.from, r.to, got)
		}
	}

	before := load(t, st)
	for _, r := range []struct {
		name     string
		from, to time.Time
	}{
		{"from off a boundary", at(0, 30), at(2, 0)},
		{"to off a boundary", at(0, 0), at(2, 15)},
		{"to after from", at(2, 0), at(2, 0)},
		{"beyond the watermark", at(5, 0), at(7, 0)},
		{"last period not past lateness", at(5, 0), at(6, 0)}, // now 06:01 < 06:00 + 2m
	} {
		now := at(6, 2)
		if r.name == "last period not past lateness" {
			now = at(6, 1)
		}
		res, err := j.Run(ctx, report.RunOptions{Now: now, Backfill: true, From: r.from, To: r.to})
		if !errors.Is(err, report.ErrBadRange) {
			t.Errorf("%s: err = %v, want ErrBadRange", r.name, err)
		}
		if len(res.Periods) != 0 {
			t.Errorf("%s: built %d periods", r.name, len(res.Periods))
		}
	}
	if after := load(t, st); after != before {
		t.Errorf("a refused backfill changed the state: %+v -> %+v", before, after)
	}
}

// TestRunDryRun: a dry run builds what is due, writes nothing, moves
// nothing and takes no lease.
func TestRunDryRun(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	sk := newSink(t)
	putHourly(t, st, at(0, 0), at(3, 0), 2)
	j := newJob("A", st, sk, st, newClock(at(10, 0)).Now)
	for _, opts := range []report.RunOptions{
		{Now: at(3, 2), DryRun: true},
		{Now: at(3, 2), DryRun: true, Backfill: true, From: at(1, 0), To: at(3, 0)},
	} {
		res, err := j.Run(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		n := 3
		if opts.Backfill {
			n = 2
		}
		if len(res.Periods) != n {
			t.Fatalf("dry run built %d periods, want %d", len(res.Periods), n)
		}
		for _, m := range res.Periods {
			if m.Transactions != 2 || len(m.Files) == 0 {
				t.Errorf("dry run of %s: %d transactions, %d files; want 2 and the files it would write", m.PeriodStart, m.Transactions, len(m.Files))
			}
		}
	}
	infos, err := sk.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 0 {
		t.Errorf("dry run wrote %d objects, first %s", len(infos), infos[0].Key)
	}
	if got := load(t, st); got != (checkpoint.State{}) {
		t.Errorf("dry run changed the state: %+v", got)
	}
}

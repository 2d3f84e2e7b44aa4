package report_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/report"
)

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

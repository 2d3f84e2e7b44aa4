package job_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/keys"
)

// TestStalledHolderPublishesNothing: run A stalls inside its first period
// past its lease; run B takes over and delivers the periods with items
// that arrived meanwhile; when A resumes it writes nothing at all (no
// claim, no object, no manifest), its checkpoint commit is fenced, and the
// sink is B's.
func TestStalledHolderPublishesNothing(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e := newEnv(t, s)
		e.putHourly(at(0, 0), at(2, 0), 4)
		hold := newHoldSource(e.st, keys.Quarter(at(0, 30)))
		a := e.job("A")
		a.Source = hold
		errA := make(chan error, 1)
		go func() {
			_, err := a.Run(context.Background(), job.RunOptions{Now: at(2, 2)})
			errA <- err
		}()
		<-hold.entered
		// A stalls past its lease (1 minute); B delivers, with an extra
		// item that A never saw.
		e.clock.Add(2 * time.Minute)
		e.put(purchase("t-extra", "a-0", 100, at(0, 45)))
		e.drv.takePuts()
		res := e.run(e.job("B"), job.RunOptions{Now: at(2, 2)})
		if len(res.Periods) != 2 || res.Periods[0].Manifest.Transactions != 5 {
			t.Fatalf("B delivered %d periods, first with %d transactions", len(res.Periods), res.Periods[0].Manifest.Transactions)
		}
		bPuts := len(e.drv.takePuts())
		before := e.objects()
		claims, _ := e.st.Lookup(context.Background(), jobName, []string{"tx-0000-0"})

		close(hold.release)
		err := <-errA
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Fatalf("A's run = %v, want ErrLeaseLost", err)
		}
		if puts := e.drv.takePuts(); len(puts) != 0 {
			t.Errorf("A wrote %q after B (B wrote %d)", puts, bPuts)
		}
		if after := e.objects(); !mapsEqual(before, after) {
			t.Error("A changed the sink")
		}
		again, _ := e.st.Lookup(context.Background(), jobName, []string{"tx-0000-0"})
		if len(claims) != 1 || len(again) != 1 || again[0] != claims[0] {
			t.Errorf("claims before %+v, after %+v", claims, again)
		}
		if st := e.state(); !st.Checkpoint.Equal(at(2, 0)) {
			t.Errorf("checkpoint %s, want 02:00", st.Checkpoint)
		}
		if e.manifest(hour(0)).Transactions != 5 {
			t.Error("B's manifest was replaced")
		}
		e.checkSink()
	})
}

// TestLeaseLostMidRun: a run whose lease is taken over while it works
// stops with ErrLeaseLost and moves nothing more.
func TestLeaseLostMidRun(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(3, 0), 2)
	hold := newHoldSource(e.st, keys.Quarter(at(1, 15)))
	a := e.job("A")
	a.Source = hold
	errA := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), job.RunOptions{Now: at(3, 2)})
		errA <- err
	}()
	<-hold.entered // 00:00 committed; A is reading 01:00
	e.clock.Add(2 * time.Minute)
	if _, err := e.st.Acquire(context.Background(), jobName, "B", e.clock.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	close(hold.release)
	if err := <-errA; !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("A's run = %v, want ErrLeaseLost", err)
	}
	if st := e.state(); !st.Checkpoint.Equal(at(1, 0)) || st.Lease.Owner != "B" {
		t.Errorf("state %+v, want checkpoint 01:00 and B's lease", st)
	}
	e.checkSink()
}

package scratch

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNewRacesSweep: runs of one job on one host start while another run
// sweeps (two `run`s on DynamoDB, a `verify` beside a `run`, parallel
// tests): a folder New returns is never swept from under its run. Before
// the fix, Sweep took a folder whose lock file New had not created or not
// locked yet for a dead run's, and removed it ("scratch folder: open
// .../.lock: no such file or directory", or a Sub that fails).
func TestNewRacesSweep(t *testing.T) {
	parent := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	stop := make(chan struct{})
	var sweeps atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := Sweep(parent, "job", log); err != nil {
					t.Error(err)
					return
				}
				sweeps.Add(1)
			}
		}()
	}
	var runs atomic.Int64
	deadline := time.Now().Add(300 * time.Millisecond)
	var rg sync.WaitGroup
	for w := range 4 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				d, err := New(parent, "job", fmt.Sprintf("run-%d-%d", w, i))
				if err != nil {
					t.Errorf("New: %v", err)
					return
				}
				if _, err := d.Sub("period"); err != nil {
					t.Errorf("Sub of a live run's folder: %v", err)
					d.Close()
					return
				}
				if err := d.Close(); err != nil {
					t.Errorf("Close: %v", err)
					return
				}
				runs.Add(1)
			}
		}()
	}
	rg.Wait()
	close(stop)
	wg.Wait()
	t.Logf("%d runs started beside %d sweeps", runs.Load(), sweeps.Load())
}

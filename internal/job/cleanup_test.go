package job_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// deleteFault passes calls to a real driver, and fails every Delete while
// failing is set (a sink that refuses deletes for a while).
type deleteFault struct {
	driver.Bucket
	failing atomic.Bool
}

var errDeleteRefused = errors.New("delete refused (test)")

func (d *deleteFault) Delete(ctx context.Context, key string) error {
	if d.failing.Load() {
		return errDeleteRefused
	}
	return d.Bucket.Delete(ctx, key)
}

// newDeleteFaultEnv is an env on the embedded stack whose sink can refuse
// deletes.
func newDeleteFaultEnv(t *testing.T) (*env, *deleteFault) {
	var df *deleteFault
	e := newEnv(t, stack{openEmbedded, func(t *testing.T) driver.Bucket {
		df = &deleteFault{Bucket: openFolder(t)}
		return df
	}})
	return e, df
}

// rejectOf returns it with content that makes it a reject (an amount that
// is not one).
func rejectOf(it item.Item) item.Item {
	it.Attrs["amount"] = it.Attrs["currency"]
	return it
}

// TestCleanupFinished: a cleanup cut short after the manifest (here every
// delete fails) is finished by the next run that touches the period,
// whatever that run finds: the period unchanged (a rerun of the recheck, a
// rerun of a backfill that only dropped objects and wrote no intent
// before), or changed again (revision 3 published before revision 2's
// cleanup finished must not strand revision 1's objects).
func TestCleanupFinished(t *testing.T) {
	tests := []struct {
		name string
		// change makes the period differ and returns the run options of
		// the run that publishes the new revision (its cleanup fails).
		change func(e *env) (*job.Job, job.RunOptions)
		// next is the run that must finish the cleanup.
		next func(e *env) (*job.Job, job.RunOptions)
	}{{
		name: "agency vanishes, rerun finds it unchanged",
		change: func(e *env) (*job.Job, job.RunOptions) {
			e.put(rejectOf(purchase("t-2", "zeta", 2000, at(10, 6))))
			return e.job("B"), job.RunOptions{Now: at(12, 1)}
		},
		next: func(e *env) (*job.Job, job.RunOptions) { return e.job("C"), job.RunOptions{Now: at(12, 1)} },
	}, {
		name: "agency vanishes, next revision before the cleanup",
		change: func(e *env) (*job.Job, job.RunOptions) {
			e.put(rejectOf(purchase("t-2", "zeta", 2000, at(10, 6))))
			return e.job("B"), job.RunOptions{Now: at(12, 1)}
		},
		next: func(e *env) (*job.Job, job.RunOptions) {
			e.put(purchase("t-3", "acme", 500, at(10, 40)))
			return e.job("C"), job.RunOptions{Now: at(12, 1)}
		},
	}, {
		name: "revision that only drops objects, backfill rerun",
		change: func(e *env) (*job.Job, job.RunOptions) {
			j := e.job("B")
			j.AgencyFiles = encode.Formats{}
			return j, job.RunOptions{Now: at(12, 1), Backfill: true, From: at(10, 0), To: at(11, 0)}
		},
		next: func(e *env) (*job.Job, job.RunOptions) {
			j := e.job("C")
			j.AgencyFiles = encode.Formats{}
			return j, job.RunOptions{Now: at(12, 1), Backfill: true, From: at(10, 0), To: at(11, 0)}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, df := newDeleteFaultEnv(t)
			e.put(purchase("t-1", "acme", 1000, at(10, 5)), purchase("t-2", "zeta", 2000, at(10, 6)))
			e.run(e.job("A"), job.RunOptions{Now: at(11, 2)})
			rev1 := e.manifest(hour(10))

			j, opts := tt.change(e)
			df.failing.Store(true)
			if _, err := j.Run(context.Background(), opts); !errors.Is(err, errDeleteRefused) {
				t.Fatalf("run with deletes refused: %v", err)
			}
			df.failing.Store(false)
			if m := e.manifest(hour(10)); m.Revision != 2 || len(m.ReplacedFiles) == 0 {
				t.Fatalf("revision %d replaced %q; objects %v", m.Revision, m.ReplacedFiles, e.keysUnder("1000Z"))
			}

			j, opts = tt.next(e)
			e.run(j, opts)
			e.checkSink()
			objs := e.objects()
			for _, f := range rev1.Files {
				if _, ok := objs[f.Key]; ok && !strings.Contains(f.Key, "agency=acme/") && strings.Contains(f.Key, "agency=") {
					t.Errorf("revision 1's %s is still there", f.Key)
				}
			}
		})
	}
}

// TestIntentNamesAdjustmentsOnlyAgency: a restatement that writes an
// adjustments file for an agency that vanished, and is then interrupted
// before its manifest, leaves that file in a folder its intent names: the
// next publication removes it, and the agency's folder holds only the
// adjustments its manifest lists.
func TestIntentNamesAdjustmentsOnlyAgency(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.put(purchase("t-1", "acme", 1000, at(10, 5)), purchase("t-2", "zeta", 2000, at(10, 6)))
	e.run(e.job("A"), job.RunOptions{Now: at(11, 2)})
	// zeta's only transaction becomes a reject; the restatement is cut
	// short before its manifest, after zeta's adjustments CSV (-20.00).
	e.put(rejectOf(purchase("t-2", "zeta", 2000, at(10, 6))))
	e.drv.setFail(func(key string) error {
		if strings.HasSuffix(key, "/manifest.json") {
			return errors.New("manifest refused (test)")
		}
		return nil
	})
	if _, err := e.job("B").Run(context.Background(), job.RunOptions{Now: at(12, 1)}); err == nil {
		t.Fatal("the run whose manifest failed succeeded")
	}
	e.drv.setFail(nil)
	if adj := e.keysUnder("agency=zeta/period=20900301T1000Z/adjustments-"); len(adj) != 1 ||
		!strings.Contains(e.read(adj[0]), "-20.00") {
		t.Fatalf("after the interrupted restatement, zeta's adjustments %q", adj)
	}
	// A new item for zeta, then the rerun: revision 2 says -15.00.
	e.put(purchase("t-4", "zeta", 500, at(10, 30)))
	e.run(e.job("C"), job.RunOptions{Now: at(12, 1)})
	e.checkSink()
	adj := e.keysUnder("agency=zeta/period=20900301T1000Z/adjustments-")
	if len(adj) != 1 || !strings.Contains(e.read(adj[0]), "-15.00") {
		t.Errorf("zeta's adjustments %q", adj)
	}
}

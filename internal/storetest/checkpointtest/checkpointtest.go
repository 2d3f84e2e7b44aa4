// Package checkpointtest is the conformance suite every job state store
// (checkpoint.Store) passes. A backend's own test calls Run with a factory
// that opens a fresh, empty store:
//
//	func TestCheckpointConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
//			return openFresh(t) // new file, or new table
//		})
//	}
//
// storetest.Run runs this suite too, through a whole backend.
//
// Times are passed to the store explicitly, so nothing sleeps. They are
// whole milliseconds, UTC: a backend may store times with millisecond
// precision.
package checkpointtest

import (
	"context"
	"testing"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Run runs every job state conformance test against the stores open
// returns, each subtest with a store of its own (open registers its own
// cleanup with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) checkpoint.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, cs checkpoint.Store)
	}{
		{"CheckpointLoadUnknown", testLoadUnknown},
		{"LeaseAcquireRenewRelease", testAcquireRenewRelease},
		{"LeaseHeld", testLeaseHeld},
		{"LeaseTakeover", testLeaseTakeover},
		{"CommitCAS", testCommitCAS},
		{"CommitLeaseLost", testCommitLeaseLost},
		{"JobsIndependent", testJobsIndependent},
		{"ConcurrentAcquire", testConcurrentAcquire},
		{"CommitAppliesUpdate", testCommitAppliesUpdate},
		{"CommitRetryAfterSuccess", testCommitRetryAfterSuccess},
		{"UpdateLeaseFencing", testUpdateLeaseFencing},
		{"RechecksOrderAndReplace", testRechecksOrderAndReplace},
		{"ManyRechecks", testManyRechecks},
		{"RestatedNewestFirst", testRestatedNewestFirst},
		{"UpdateRejectsBadInput", testUpdateRejectsBadInput},
		{"GridWrittenWithCheckpoint", testGridWrittenWithCheckpoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := open(t)
			if cs == nil {
				t.Fatalf("store factory returned nil")
			}
			tc.fn(t, cs)
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

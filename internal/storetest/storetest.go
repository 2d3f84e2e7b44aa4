// Package storetest is the conformance suite every store backend passes:
// the data table (collect.Source, ingest.Writer) and the job state
// (checkpoint.Store). A backend's own test calls Run with a factory that
// opens a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Backend {
//			s := openFresh(t) // new file, or new tables
//			return storetest.Backend{Source: s, Writer: s, Checkpoints: s, Index: s}
//		})
//	}
//
// Times are passed to the checkpoint store explicitly, so nothing sleeps.
// They are whole milliseconds, UTC: a backend may store times with
// millisecond precision. Number attributes are compared by value, not
// text, since DynamoDB normalises numbers ("19.990" comes back "19.99");
// string attributes and keys are compared byte for byte.
package storetest

import (
	"context"
	"testing"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/ingest"
)

// Backend is one store under test. Each call of the factory returns a
// fresh, empty store (new file / new tables). The factory registers its
// own cleanup with t.Cleanup.
type Backend struct {
	Source      collect.Source
	Writer      ingest.Writer
	Checkpoints checkpoint.Store
	Index       collect.Index // may be nil for tests that do not need it
}

// Run runs every conformance test against the backends open returns, each
// subtest with a store of its own.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"ItemsRoundTrip", testItemsRoundTrip},
		{"QueryOrder", testQueryOrder},
		{"QueryAfter", testQueryAfter},
		{"QueryPaging", testQueryPaging},
		{"QueryEmptyPartition", testQueryEmptyPartition},
		{"PartitionsIsolated", testPartitionsIsolated},
		{"PutItemsOverwrites", testPutItemsOverwrites},
		{"QueryReturnsFnError", testQueryReturnsFnError},
		{"QueryHonoursContext", testQueryHonoursContext},
		{"QueryConcurrent", testQueryConcurrent},
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
		{"RestatedNewestFirst", testRestatedNewestFirst},
		{"UpdateRejectsBadInput", testUpdateRejectsBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := open(t)
			if b.Source == nil || b.Writer == nil || b.Checkpoints == nil {
				t.Fatalf("backend factory returned a Backend with a nil field: %+v", b)
			}
			tc.fn(t, b)
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

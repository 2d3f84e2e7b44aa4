// Package storetest is the conformance suite every store backend passes:
// the data table (collect.Source, ingest.Writer) and the job state
// (checkpoint.Store, whose suite is package checkpointtest). The dedupe
// index (collect.Index) has its own suite, package indextest. A backend's
// own test calls Run with a factory that opens a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Backend {
//			s := openFresh(t) // new file, or new tables
//			return storetest.Backend{Source: s, Writer: s, Checkpoints: s}
//		})
//	}
//
// Number attributes are compared by value, not text, since DynamoDB
// normalises numbers ("19.990" comes back "19.99"); string attributes and
// keys are compared byte for byte.
package storetest

import (
	"context"
	"testing"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/outbox"
	"github.com/reportjob/reportjob/internal/storetest/checkpointtest"
	"github.com/reportjob/reportjob/internal/storetest/outboxtest"
)

// Backend is one store under test. Each call of the factory returns a
// fresh, empty store (new file / new tables). The factory registers its
// own cleanup with t.Cleanup.
type Backend struct {
	Source      collect.Source
	Writer      ingest.Writer
	Checkpoints checkpoint.Store
	// Outbox is the same store's outbox (the state store keeps it).
	Outbox outbox.Store
}

// Run runs every conformance test of the data table, then the job state
// suite (package checkpointtest), against the backends open returns, each
// subtest with a store of its own. Source, Writer, Checkpoints and Outbox
// must all be set; the outbox suite is package outboxtest.
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
	}
	openFull := func(t *testing.T) Backend {
		b := open(t)
		if b.Source == nil || b.Writer == nil || b.Checkpoints == nil || b.Outbox == nil {
			t.Fatalf("backend factory returned a Backend with a nil field: %+v", b)
		}
		return b
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, openFull(t)) })
	}
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return openFull(t).Checkpoints })
	outboxtest.Run(t, func(t *testing.T) outboxtest.Store {
		b := openFull(t)
		s, ok := b.Outbox.(outboxtest.Store)
		if !ok {
			t.Fatalf("backend's Outbox %T is not also its checkpoint.Store", b.Outbox)
		}
		return s
	})
}

func ctx(t *testing.T) context.Context { return t.Context() }

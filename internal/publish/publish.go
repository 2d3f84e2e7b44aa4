// Package publish delivers a period's encoded files to the sink as one
// revision, and is the only code that writes there.
//
// The protocol, for period P:
//
//  1. Read the published manifest of P, if any, with its ETag, and list
//     manifests/period=P/ for the intents of interrupted publications.
//  2. Check the fence (this run still holds its lease), then write this
//     run's intent, manifests/period=P/pending-RUN.json, naming the agency
//     folders it writes, before the first upload (rewritten before an
//     upload into a folder it does not name yet) and at the latest before
//     a manifest that replaces objects: while it exists, the period's
//     cleanup is pending.
//  3. Upload each object (its name carries its content hash, so the same
//     content is the same object), checking the fence before each, and
//     skipping the objects the current manifest already lists. The
//     uploads may return before their objects are durable (a folder sink
//     batches its fsyncs: sink.PutOptions.Defer); the sink's Sync makes
//     them all durable before the manifest is written.
//  4. Check the fence, then write the manifest: If-None-Match: * when P had
//     none, If-Match: <the ETag read in 1> otherwise. Two publishers can
//     never blindly overwrite each other; a response lost in transit is
//     recognised by reading the manifest back.
//  5. Clean up (see cleanup for exactly what is deleted): what the
//     manifest does not list under P's dataset prefixes, the objects of the
//     previous revision it replaced, and what interrupted publications left
//     in the agency folders their intents named; then the intents.
//
// A reader that globs a dataset prefix therefore sees exactly the latest
// revision once step 5 is done; a reader that follows manifests sees it at
// step 4. Nothing a manifest lists ever changes. A cleanup cut short (a
// crash, a failed delete, a lost lease) is finished by the next run that
// touches P, before it publishes anything else there.
package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// Fence tells whether the run still holds its lease: Check returns nil
// only while it certainly does (checkpoint.ErrLeaseLost otherwise).
type Fence interface {
	Check() error
}

// ErrRaced means another publisher replaced the manifest between this
// run's read and its write: this run must not go on (it has most likely
// lost its lease).
var ErrRaced = errors.New("the manifest was replaced by another publisher")

// maxManifestBytes bounds a manifest read back.
const maxManifestBytes = 64 << 20

// Log attribute keys.
const (
	logKey    = "key"
	logPeriod = "period"
	logCount  = "count"
)

// Publisher publishes periods to Bucket.
type Publisher struct {
	Bucket *sink.Bucket
	// Fence is checked before every write; nil for a dry run (whose Bucket
	// is sink.Discard()).
	Fence Fence
	// RunID names this run's intents.
	RunID string
	// Concurrency bounds the uploads and deletes in flight.
	Concurrency int
	// Now stamps intents (default time.Now).
	Now func() time.Time
	// DryRun reads from Bucket and writes nothing: uploads, manifests and
	// deletes go to sink.Discard().
	DryRun bool
	Log    *slog.Logger
}

// out is where writes go.
func (pb *Publisher) out() *sink.Bucket {
	if pb.DryRun {
		return sink.Discard()
	}
	return pb.Bucket
}

func (pb *Publisher) fence() error {
	if pb.Fence == nil {
		return nil
	}
	return pb.Fence.Check()
}

func (pb *Publisher) now() time.Time {
	if pb.Now == nil {
		return time.Now()
	}
	return pb.Now()
}

func (pb *Publisher) workers() int { return max(pb.Concurrency, 1) }

// Current is what the sink holds of a period.
type Current struct {
	Period report.Period
	// Manifest is the published manifest, nil when the period was never
	// published; Raw its bytes and ETag the version read.
	Manifest *report.Manifest
	Raw      []byte
	ETag     string
	// Intents are the keys of publications that did not finish (this
	// run's excluded).
	Intents []string
}

// Current reads what the sink holds of period p.
func (pb *Publisher) Current(ctx context.Context, p report.Period) (*Current, error) {
	cur := &Current{Period: p}
	objs, err := pb.Bucket.List(ctx, report.ManifestPrefix(p))
	if err != nil {
		return nil, fmt.Errorf("read the manifest of %s: %w", p.Name(), err)
	}
	hasManifest := false
	for _, o := range objs {
		switch {
		case o.Key == report.ManifestKey(p):
			hasManifest = true
		case report.IsIntentKey(o.Key) && o.Key != report.IntentKey(p, pb.RunID):
			cur.Intents = append(cur.Intents, o.Key)
		}
	}
	if !hasManifest {
		return cur, nil
	}
	raw, attrs, err := pb.Bucket.ReadAll(ctx, report.ManifestKey(p), maxManifestBytes)
	if errors.Is(err, sink.ErrNotFound) {
		return cur, nil // deleted since the listing
	}
	if err != nil {
		return nil, fmt.Errorf("read the manifest of %s: %w", p.Name(), err)
	}
	m, err := report.ReadManifest(ctx, raw, pb.readPart)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pb.Bucket.URL(report.ManifestKey(p)), err)
	}
	if !m.PeriodStart.Equal(p.Start) || !m.PeriodEnd.Equal(p.End) {
		return nil, fmt.Errorf("%s: the manifest is of period %s, not %s", pb.Bucket.URL(report.ManifestKey(p)), m.Period(), p)
	}
	cur.Manifest, cur.Raw, cur.ETag = m, raw, attrs.ETag
	return cur, nil
}

// readPart reads a manifest part (report.PartReader).
func (pb *Publisher) readPart(ctx context.Context, key string) ([]byte, error) {
	raw, _, err := pb.Bucket.ReadAll(ctx, key, report.MaxPartBytes)
	return raw, err
}

// intent is the body of manifests/period=P/pending-RUN.json.
type intent struct {
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	// Agencies are the escaped agency ids whose folders the run writes.
	Agencies []string `json:"agencies"`
}

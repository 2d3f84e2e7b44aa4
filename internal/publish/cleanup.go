package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// What cleanup deletes. This is the one place the rule is stated and
// enforced; everything else (Commit, Close, Clean, Begin) calls cleanup.
//
// Once manifest M of period P is published, P's objects are exactly
// M.Files. The cleanup of M deletes, and nothing else:
//
//   - every object under P's dataset prefixes (summary/, transactions/,
//     adjustments/, rejects/ period=P/) that M does not list;
//   - every key of M.ReplacedFiles (the objects of the revision M replaced,
//     agency folders included) that M does not list;
//   - every object M does not list in the agency folders of P named by a
//     pending intent (what interrupted publications uploaded there);
//   - every manifest part under manifests/period=P/ that M does not name
//     (a replaced revision's, an interrupted publication's);
//
// then the intents. It deletes the agency-folder objects first, the
// dataset objects next and the intents last, so that a cleanup cut short
// (a crash, a failed delete, a lost lease) stays visible: an intent
// remains (every publication whose manifest replaces or adds objects
// writes one before its manifest), or, for a sink written by an older
// version that wrote none, an unlisted object under a dataset prefix.
//
// Every run that touches P finishes a pending cleanup: a rerun, a recheck
// or a backfill that finds P unchanged (Clean), and any publication of P
// before it uploads anything (Begin), so that the manifest a new revision
// replaces never takes the list of its own replaced objects with it.
//
// Cost: a period with no intent and no replaced files costs nothing more
// than reading its manifest; otherwise one LIST per dataset prefix, plus
// one LIST per agency folder an intent names, and the deletes. Agency
// folders are never listed wholesale.

// Clean finishes a cleanup of cur's current revision that was cut short
// (see above), and is a no-op when none is pending. The deleted intents
// are removed from cur.Intents.
func (pb *Publisher) Clean(ctx context.Context, cur *Current) error {
	if cur.Manifest == nil || (len(cur.Intents) == 0 && len(cur.Manifest.ReplacedFiles) == 0) {
		return nil
	}
	if err := pb.fence(); err != nil {
		return fmt.Errorf("clean %s: %w", cur.Period.Name(), err)
	}
	if err := pb.cleanup(ctx, cur.Period, cur.Manifest, cur.Intents, false); err != nil {
		return err
	}
	cur.Intents = nil
	return nil
}

// cleanup deletes what m, the published manifest of p, does not list (see
// above). Unless always, it does nothing when no intent is given and no
// dataset prefix holds an unlisted object (nothing is pending).
func (pb *Publisher) cleanup(ctx context.Context, p report.Period, m *report.Manifest, intents []string, always bool) error {
	keep := newFileIndex(m.Files)
	var datasets []string
	for _, d := range report.Datasets {
		keys, err := pb.unlisted(ctx, p, report.DatasetPrefix(d, p), keep)
		if err != nil {
			return err
		}
		datasets = append(datasets, keys...)
	}
	// Manifest parts (report.Manifest.Parts) the manifest does not name:
	// a replaced revision's, or an interrupted publication's.
	strays, err := pb.strayParts(ctx, p, m)
	if err != nil {
		return fmt.Errorf("clean %s: %w", p.Name(), err)
	}
	datasets = append(datasets, strays...)
	if !always && len(intents) == 0 && len(datasets) == 0 {
		return nil
	}
	var agencies []string
	for _, key := range m.ReplacedFiles {
		if keep.has(key) {
			continue
		}
		if _, ok := report.AgencySegment(key); ok {
			agencies = append(agencies, key)
		} else {
			datasets = append(datasets, key)
		}
	}
	mine := report.IntentKey(p, pb.RunID)
	var folders []string
	for _, key := range intents {
		if key == mine {
			continue // this run's uploads are all listed
		}
		in, err := pb.readIntent(ctx, key)
		if err != nil {
			return err
		}
		for _, esc := range in.Agencies {
			folders = append(folders, report.EscapedAgencyPrefix(esc, p))
		}
	}
	slices.Sort(folders)
	for _, prefix := range slices.Compact(folders) {
		keys, err := pb.unlisted(ctx, p, prefix, keep)
		if err != nil {
			return err
		}
		agencies = append(agencies, keys...)
	}
	n := 0
	for _, keys := range [][]string{agencies, datasets} {
		slices.Sort(keys)
		keys = slices.Compact(keys)
		if err := pb.deleteAll(ctx, p, keys, true); err != nil {
			return err
		}
		n += len(keys)
	}
	if n > 0 {
		// The deletes may wait for the sink's Sync to be durable (a
		// folder sink batches them): the intents go only after it, so
		// that a crash before it leaves them for the next cleanup.
		if err := pb.out().Sync(ctx); err != nil {
			return fmt.Errorf("clean %s: %w", p.Name(), err)
		}
		pb.Log.Info("deleted objects the manifest does not list", logPeriod, p.Name(), logCount, n)
	}
	if err := pb.deleteAll(ctx, p, intents, false); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.AfterCleanup)
	return nil
}

// strayParts returns the manifest parts under p's manifest prefix that m
// does not name: those of a replaced revision or of a publication that
// did not reach its manifest.
func (pb *Publisher) strayParts(ctx context.Context, p report.Period, m *report.Manifest) ([]string, error) {
	objs, err := pb.Bucket.List(ctx, report.ManifestPrefix(p))
	if err != nil {
		return nil, err
	}
	keep := m.PartKeys()
	var out []string
	for _, o := range objs {
		if report.IsPartKey(o.Key) && !keep[o.Key] {
			out = append(out, o.Key)
		}
	}
	return out, nil
}

// unlisted lists prefix and returns the keys there that keep lacks.
func (pb *Publisher) unlisted(ctx context.Context, p report.Period, prefix string, keep fileIndex) ([]string, error) {
	objs, err := pb.Bucket.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("clean %s: %w", p.Name(), err)
	}
	var out []string
	for _, o := range objs {
		if !keep.has(o.Key) {
			out = append(out, o.Key)
		}
	}
	return out, nil
}

func (pb *Publisher) readIntent(ctx context.Context, key string) (intent, error) {
	var in intent
	raw, _, err := pb.Bucket.ReadAll(ctx, key, maxManifestBytes)
	if errors.Is(err, sink.ErrNotFound) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("read intent: %w", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("read intent %s: %w", pb.Bucket.URL(key), err)
	}
	return in, nil
}

// deleteAll deletes keys, Concurrency at a time, checking the fence;
// deferred: the deletes may wait for the sink's Sync to be durable.
func (pb *Publisher) deleteAll(ctx context.Context, p report.Period, keys []string, deferred bool) error {
	if len(keys) == 0 {
		return nil
	}
	if err := pb.fence(); err != nil {
		return fmt.Errorf("clean %s: %w", p.Name(), err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, pb.workers())
	for _, key := range keys {
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if acquired {
				<-sem // a slot kept would block the wait below for good
			}
			break
		}
		// Waiting for a slot may have taken long (see upload).
		if err := pb.fence(); err != nil {
			<-sem
			cancel(fmt.Errorf("clean %s: %w", p.Name(), err))
			break
		}
		go func() {
			defer func() { <-sem }()
			del := pb.out().Delete
			if deferred {
				del = pb.out().DeleteDeferred
			}
			if err := del(ctx, key); err != nil {
				cancel(fmt.Errorf("clean %s: %w", p.Name(), err))
			}
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	return context.Cause(ctx)
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// Published is what a period's manifest in the sink says of its period.
type Published struct {
	Period   report.Period
	Revision int
	Reason   string
}

// PublishedBefore reads every period manifest in the sink whose period
// starts before t, oldest first: one listing of the manifests folder and
// one read of each manifest, Concurrency at a time. It costs O(periods
// published) and is meant for a one-time look at the whole record (the
// grid of a state written before grids were recorded).
func (pb *Publisher) PublishedBefore(ctx context.Context, t time.Time) ([]Published, error) {
	objs, err := pb.Bucket.List(ctx, report.DirManifests+"/")
	if err != nil {
		return nil, fmt.Errorf("list the manifests: %w", err)
	}
	var keys []string
	for _, o := range objs {
		rest, ok := strings.CutPrefix(o.Key, report.DirManifests+"/period=")
		name, ok2 := strings.CutSuffix(rest, "/manifest.json")
		if !ok || !ok2 {
			continue
		}
		start, err := time.Parse("20060102T1504Z", name)
		if err != nil || !start.Before(t) {
			continue
		}
		keys = append(keys, o.Key)
	}
	out := make([]Published, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, pb.workers())
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			raw, _, err := pb.Bucket.ReadAll(ctx, key, maxManifestBytes)
			if errors.Is(err, sink.ErrNotFound) {
				return // deleted since the listing
			}
			if err != nil {
				errs[i] = fmt.Errorf("read %s: %w", pb.Bucket.URL(key), err)
				return
			}
			m, err := report.ParseManifest(raw)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", pb.Bucket.URL(key), err)
				return
			}
			out[i] = Published{Period: m.Period(), Revision: m.Revision, Reason: m.Reason}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := out[:0]
	for _, p := range out {
		if p.Revision > 0 {
			res = append(res, p)
		}
	}
	return res, nil
}

// LastFrom returns the period of the last manifest in the sink whose
// period starts at or after t (zero when there is none): one listing of
// the period manifests from t's on (their keys sort by time), whose cost
// grows with the periods published from t on (normally none), and one
// read.
func (pb *Publisher) LastFrom(ctx context.Context, t time.Time) (report.Period, error) {
	prefix := report.DirManifests + "/period="
	objs, err := pb.Bucket.ListAfter(ctx, prefix, prefix+report.Period{Start: t}.Name())
	if err != nil {
		return report.Period{}, fmt.Errorf("list the manifests from %s on: %w", t.UTC().Format(time.RFC3339), err)
	}
	for i := len(objs) - 1; i >= 0; i-- {
		key := objs[i].Key
		if !strings.HasSuffix(key, "/manifest.json") {
			continue // a publication intent
		}
		raw, _, err := pb.Bucket.ReadAll(ctx, key, maxManifestBytes)
		if errors.Is(err, sink.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return report.Period{}, fmt.Errorf("read %s: %w", pb.Bucket.URL(key), err)
		}
		m, err := report.ParseManifest(raw)
		if err != nil {
			return report.Period{}, fmt.Errorf("%s: %w", pb.Bucket.URL(key), err)
		}
		return m.Period(), nil
	}
	return report.Period{}, nil
}

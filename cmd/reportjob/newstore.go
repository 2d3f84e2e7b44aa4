package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/report"
)

// errSinkHasPeriods is a new store (or a job without a checkpoint) about to
// report into a sink that already holds periods: most often a relative
// path that points elsewhere than the config meant, or the wrong job_name
// or state table. Nothing is created; exit 2.
var errSinkHasPeriods = errors.New("the sink already holds reported periods")

// storeMissing reports whether the configured store is an embedded file
// that does not exist yet (opening it would create it). DynamoDB tables
// are only created by init: it reports false for them.
func storeMissing(cfg *config.Config) bool {
	if cfg.Store.Backend != "embedded" {
		return false
	}
	_, err := os.Stat(cfg.Store.Embedded.Path)
	return errors.Is(err, fs.ErrNotExist)
}

// absPath returns p made absolute, for people (p itself if that fails).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// storeWhere is the store as status and the refusals name it: the
// embedded file's absolute path, or the DynamoDB tables and endpoint.
func storeWhere(cfg *config.Config) string {
	if cfg.Store.Backend == "embedded" {
		return absPath(cfg.Store.Embedded.Path)
	}
	d := cfg.Store.DynamoDB
	s := "dynamodb tables " + d.Table + ", " + d.StateTable
	if d.Endpoint != "" {
		s += " at " + d.Endpoint
	}
	return s
}

// sinkWhere is the sink's absolute folder, or its s3:// URL.
func sinkWhere(cfg *config.Config) string {
	if strings.HasPrefix(cfg.Sink.URL, "file://") {
		return absPath(cfg.Sink.Dir)
	}
	return cfg.Sink.URL
}

// sinkURL is the sink as commands print it: a folder sink as file:// and
// its absolute path (sink.url may be relative to the config file's folder,
// or to the working folder without one), an S3 sink as its URL.
func sinkURL(cfg *config.Config) string {
	if strings.HasPrefix(cfg.Sink.URL, "file://") {
		return "file://" + filepath.ToSlash(absPath(cfg.Sink.Dir))
	}
	return cfg.Sink.URL
}

// configWhere is the config file read, or what replaced it.
func configWhere(cfg *config.Config) string {
	if f := configFile(cfg); f != "" {
		return f
	}
	return "none (defaults and REPORTJOB_* variables; relative paths are relative to the working folder)"
}

// configFile is the config file read, as an absolute path ("" when none was):
// status --json's "config".
func configFile(cfg *config.Config) string {
	if cfg.File == "" {
		return ""
	}
	return absPath(cfg.File)
}

// sinkPeriods returns the starts of the periods with a manifest in the
// sink, ascending. It creates nothing: a file sink whose folder does not
// exist holds none.
func (c *cli) sinkPeriods(ctx context.Context) ([]time.Time, error) {
	if strings.HasPrefix(c.cfg.Sink.URL, "file://") {
		if _, err := os.Stat(c.cfg.Sink.Dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	b, err := openBucket(ctx, c)
	if err != nil {
		return nil, err
	}
	infos, err := b.List(ctx, report.DirManifests+"/")
	if err != nil {
		return nil, fmt.Errorf("list the sink's manifests: %w", err)
	}
	var starts []time.Time
	for _, o := range infos {
		name, ok := strings.CutPrefix(o.Key, report.DirManifests+"/period=")
		name, file, _ := strings.Cut(name, "/")
		if !ok || file != "manifest.json" {
			continue
		}
		if t, err := time.Parse("20060102T1504Z", name); err == nil {
			starts = append(starts, t.UTC())
		}
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	return starts, nil
}

// periodsSpan describes periods for a message: "14 period(s), 20260301T0000Z to 20260301T1300Z".
func periodsSpan(starts []time.Time) string {
	name := func(t time.Time) string { return report.Period{Start: t}.Name() }
	return fmt.Sprintf("%d period(s), %s to %s", len(starts), name(starts[0]), name(starts[len(starts)-1]))
}

// refuseNewStore returns an errSinkHasPeriods error when the embedded
// file does not exist yet and the sink already holds periods: creating
// the file would start the job over from nothing over them. init creates
// the file anyway (that is what it is for).
func (c *cli) refuseNewStore(ctx context.Context) error {
	if c.allowNewStore || !storeMissing(c.cfg) {
		return nil
	}
	starts, err := c.sinkPeriods(ctx)
	if err != nil || len(starts) == 0 {
		return err
	}
	return fmt.Errorf("%w: the store %s does not exist, but the sink %s holds %s: "+
		"a new store would report them again from nothing. If the store is elsewhere, set store.embedded.path "+
		"(a relative path is relative to the config file's folder: config %s); "+
		"to start a new store for this sink on purpose, run `reportjob init` first",
		errSinkHasPeriods, storeWhere(c.cfg), sinkWhere(c.cfg), periodsSpan(starts), configWhere(c.cfg))
}

// neverRan reports whether the job's state shows no run at all: no
// checkpoint, and no lease ever taken (every run that writes takes it
// first, a backfill too). A first run that published periods and then
// failed before its checkpoint commit leaves its lease behind: its rerun
// is no first run.
func neverRan(st checkpoint.State) bool {
	return st.Checkpoint.IsZero() && st.Lease.Owner == "" && len(st.Rechecks) == 0 && len(st.Grid) == 0
}

// refuseFirstRun returns an errSinkHasPeriods error for the first run of
// a job (neverRan) when the sink already holds periods it would deliver
// again (any at or after report.start).
func (c *cli) refuseFirstRun(ctx context.Context) error {
	starts, err := c.sinkPeriods(ctx)
	if err != nil {
		return err
	}
	start := c.cfg.Report.Start
	i, _ := slices.BinarySearchFunc(starts, start, func(a, b time.Time) int { return a.Compare(b) })
	starts = starts[i:]
	if len(starts) == 0 {
		return nil
	}
	next := starts[len(starts)-1].Add(c.cfg.Report.Period)
	return fmt.Errorf("%w: job %q has never run with the store %s, but the sink %s holds %s from report.start on: "+
		"a first run would deliver them again from this store. If the job's state is elsewhere, check store.* and "+
		"job_name (a relative path is relative to the config file's folder: config %s); to continue after them, "+
		"set report.start to %s; to rebuild them from this store on purpose, use run --backfill --from --to",
		errSinkHasPeriods, c.cfg.JobName, storeWhere(c.cfg), sinkWhere(c.cfg), periodsSpan(starts), configWhere(c.cfg),
		next.Format(time.RFC3339))
}

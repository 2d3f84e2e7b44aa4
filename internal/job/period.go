package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/aggregate"
	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
)

// mode says why a period is built.
type mode struct {
	kind   string // "period", "recheck", "backfill", "repair"
	reason string // the manifest's reason when it publishes
	// rebuild builds the period even when its items match the manifest
	// (a backfill applies today's configuration; a repair restores
	// objects).
	rebuild bool
	// repair tolerates a current revision whose objects cannot be read
	// back (it is being repaired), and restore names the objects to upload
	// even though the manifest lists them.
	repair  bool
	restore map[string]bool
	// reprice prices the period with today's rates rather than those it
	// was billed with (verify --repair --reprice).
	reprice bool
}

var (
	modeDelivery = mode{kind: "period", reason: report.ReasonDelivery}
	modeRecheck  = mode{kind: "recheck", reason: report.ReasonRecheck}
	modeBackfill = mode{kind: "backfill", reason: report.ReasonBackfill, rebuild: true}
	modeRepair   = mode{kind: "repair", reason: report.ReasonRepair, rebuild: true, repair: true}
	modeReprice  = mode{kind: "repair", reason: report.ReasonReprice, rebuild: true, repair: true, reprice: true}
)

// deliver builds a due period (or a backfilled one) and, for a due period,
// moves the checkpoint from `from` to its end.
func (r *runner) deliver(ctx context.Context, p report.Period, from time.Time, backfill bool) (PeriodResult, error) {
	m := modeDelivery
	if backfill {
		m = modeBackfill
	}
	readAt := r.readTime()
	pr, err := r.build(ctx, p, m)
	if err != nil || r.opts.DryRun {
		return pr, err
	}
	log := r.j.Log.With(LogPeriod, p.Name())
	var u checkpoint.Update
	if u.Restated, err = r.restated(ctx, pr, readAt); err != nil {
		return pr, err
	}
	if backfill {
		if u.Restated != nil {
			if err := r.j.State.Update(ctx, r.j.Name, r.leaseNow(), r.j.now(), u); err != nil {
				return pr, fmt.Errorf("record restatement: %w", err)
			}
		}
		return pr, nil
	}
	if report.RecheckOwed(p.End, readAt, r.j.RecheckAfter) {
		u.SetRecheck = &checkpoint.Recheck{Start: p.Start, End: p.End, Read: readAt}
	}
	grid, newEpoch := r.grid.Delivered(p)
	if newEpoch {
		u.Grid = grid
	}
	if err := r.j.State.Commit(ctx, r.j.Name, r.leaseNow(), r.j.now(), from, p.End, u); err != nil {
		return pr, fmt.Errorf("commit checkpoint %s: %w", p.End.UTC().Format(time.RFC3339), err)
	}
	r.grid.Checkpoint, r.grid.Epochs = p.End, grid
	if newEpoch && len(grid) > 1 {
		log.Info("period grid changed", "period", report.FormatDuration(r.j.Period), "from", p.Start.UTC().Format(time.RFC3339))
	}
	crashpoint.Hit(crashpoint.AfterCheckpoint)
	log.Info("checkpoint moved", "checkpoint", p.End.UTC().Format(time.RFC3339))
	return pr, nil
}

// recheck re-reads a delivered period, restates it if its items changed,
// and records the read.
func (r *runner) recheck(ctx context.Context, p report.Period) (PeriodResult, error) {
	readAt := r.readTime()
	pr, err := r.build(ctx, p, modeRecheck)
	if err != nil {
		return pr, err
	}
	var u checkpoint.Update
	if report.RecheckOwed(p.End, readAt, r.j.RecheckAfter) {
		u.SetRecheck = &checkpoint.Recheck{Start: p.Start, End: p.End, Read: readAt}
	} else {
		u.DropRecheck = p.Start
	}
	if u.Restated, err = r.restated(ctx, pr, readAt); err != nil {
		return pr, err
	}
	if err := r.j.State.Update(ctx, r.j.Name, r.leaseNow(), r.j.now(), u); err != nil {
		return pr, fmt.Errorf("record recheck: %w", err)
	}
	crashpoint.Hit(crashpoint.AfterCheckpoint)
	return pr, nil
}

func restatement(pr PeriodResult, at time.Time) *checkpoint.Restatement {
	return &checkpoint.Restatement{
		Start: pr.Period.Start, End: pr.Period.End, Revision: pr.Manifest.Revision, Reason: pr.Manifest.Reason,
		At: at, ItemsBefore: pr.Manifest.PreviousItemsRead, ItemsAfter: pr.Manifest.ItemsRead,
	}
}

// restated returns the restatement to record for pr: the one it
// published, or, when it found the period unchanged at a revision > 1,
// that revision's if the state lacks it (a run that crashed between the
// manifest and the state write published it).
func (r *runner) restated(ctx context.Context, pr PeriodResult, at time.Time) (*checkpoint.Restatement, error) {
	switch {
	case pr.Restated():
		return restatement(pr, at), nil
	case pr.Outcome != OutcomeUnchanged || pr.Manifest.Revision < 2:
		return nil, nil
	}
	st, err := r.j.State.Load(ctx, r.j.Name)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	for _, rs := range st.Restated {
		if rs.Start.Equal(pr.Period.Start) && rs.Revision >= pr.Manifest.Revision {
			return nil, nil
		}
	}
	if len(st.Restated) == checkpoint.MaxRestated && pr.Manifest.GeneratedAt.Before(st.Restated[len(st.Restated)-1].At) {
		return nil, nil // older than what the state keeps
	}
	return restatement(pr, at), nil
}

// publisher returns the run's publisher: writes go nowhere in a dry run.
func (r *runner) publisher() *publish.Publisher {
	pb := &publish.Publisher{
		Bucket: r.j.Bucket, RunID: r.j.RunID, Concurrency: r.j.Concurrency, Now: r.j.now, Log: r.j.Log,
	}
	if r.lease != nil {
		pb.Fence = r.lease
	} else {
		pb.DryRun = true
	}
	return pb
}

// sameItems reports whether col read the items m recorded. Items are
// compared by content (fingerprint and count), never by the partitions
// they were read from, which change with keys.shards.
func sameItems(m *report.Manifest, col *collect.Collected) bool {
	return m.FingerprintVersion() == col.FingerprintVersion &&
		m.ItemsFingerprint == col.Fingerprint.String() && m.ItemsRead == col.ItemsRead
}

// collectConfig is how period p, whose published manifest is cur (nil if
// none), is read.
func (r *runner) collectConfig(dir string, p report.Period, cur *report.Manifest) collect.Config {
	b := r.j.Bucket
	var delivered []string
	if cur != nil {
		delivered = cur.Partitions
	}
	return collect.Config{
		Shards: report.ReadShards(p, r.j.Shards, delivered), Concurrency: r.j.Concurrency, Dir: dir, SortMemBytes: r.j.SortMemBytes,
		Fingerprint: report.FingerprintFor(cur),
		AgencyProblem: func(agency string) string {
			// The longest object name an agency folder holds.
			key := report.AgencyPrefix(agency, report.Period{}) + "transactions-0123456789abcdef.parquet"
			if err := b.CheckKey(key); err != nil {
				return fmt.Sprintf("its report objects cannot be stored in %s: %v", b, err)
			}
			return ""
		},
	}
}

// build reads period p and publishes a new revision when its items, or
// (for a rebuild) its outputs, differ from the published one.
func (r *runner) build(ctx context.Context, p report.Period, m mode) (PeriodResult, error) {
	j := r.j
	log := j.Log.With(LogPeriod, p.Name())
	started := time.Now()
	clock := newStages()
	defer clock.log(log)
	res := PeriodResult{Period: p, Kind: m.kind}
	dir, err := r.scratch.Sub(p.Name())
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)

	pb := r.publisher()
	cur, err := pb.Current(ctx, p)
	if err != nil {
		return res, err
	}
	if cur.Manifest == nil && m.kind != modeDelivery.kind {
		if err := r.checkNotBooked(ctx, p); err != nil {
			return res, err
		}
	}
	col, err := collect.Read(ctx, r.collectConfig(dir, p, cur.Manifest), j.Source, p)
	if err != nil {
		return res, err
	}
	defer col.Close()
	clock.done("read_ms")
	crashpoint.Hit(crashpoint.AfterRead)
	fp := col.Fingerprint.String()
	if prev := cur.Manifest; prev != nil && !m.rebuild && sameItems(prev, col) {
		// The items are what the manifest recorded: nothing to write but
		// what an interrupted publication left.
		if err := pb.Clean(ctx, cur); err != nil {
			return res, err
		}
		res.Outcome, res.Manifest = OutcomeUnchanged, prev
		log.Info("period unchanged", "kind", m.kind, "items_read", col.ItemsRead, "revision", prev.Revision,
			"duration_ms", time.Since(started).Milliseconds())
		return res, nil
	}

	prices, err := r.prices(ctx, pb, cur, m, dir)
	if err != nil {
		return res, err
	}
	defer prices.Close()
	rates := prices.Table()
	agg := aggregate.New(p, aggregate.Options{Prices: prices, LineItems: j.LineItems, Dir: dir, SortMemBytes: j.SortMemBytes})
	defer agg.Close()
	var index collect.Index
	if j.DedupeWindow > 0 {
		index = j.Index
	}
	var fence func() error
	if r.lease != nil {
		fence = r.lease.Check
	}
	previous, release, err := r.decisions(ctx, pb, cur, m, dir, prices)
	if err != nil {
		return res, err
	}
	defer release()
	record := report.RecordDecisions(cur.Manifest, cur.Manifest != nil && sameItems(cur.Manifest, col))
	st, err := col.Dedupe(ctx, collect.DedupeOptions{
		Job: j.Name, Index: index, Window: j.DedupeWindow, Write: !r.opts.DryRun, Fence: fence, Now: r.opts.Now, Wall: j.now(),
		Previous: previous, Record: record,
	}, agg.Add)
	if err != nil {
		return res, err
	}
	if err := prices.Finish(); err != nil {
		return res, err
	}
	clock.done("dedupe_ms")
	rows, err := agg.Summary()
	if err != nil {
		return res, err
	}
	clock.done("aggregate_ms")
	revision := 1
	if cur.Manifest != nil {
		revision = cur.Manifest.Revision + 1
	}
	var agencies []string
	if j.AgencyFiles.CSV || j.AgencyFiles.Parquet {
		for _, row := range rows {
			if len(agencies) == 0 || agencies[len(agencies)-1] != row.AgencyID {
				agencies = append(agencies, row.AgencyID)
			}
		}
	}
	sess, err := pb.Begin(ctx, cur, agencies, publish.Options{Restore: m.restore})
	if err != nil {
		return res, err
	}
	defer sess.Abort() // no-op once committed
	layout := report.LayoutFor(cur.Manifest)
	w := encode.NewWriter(dir, p, j.AgencyFiles, layout, sess.Upload)
	defer w.Close()
	if err := r.encode(w, agg, rows, st); err != nil {
		return res, err
	}
	clock.done("encode_ms")
	// The adjustments come last, once the other objects are known: a
	// rebuild whose items and other objects are the current revision's
	// reproduces that revision, its adjustments included.
	reproduce := cur.Manifest != nil && sameItems(cur.Manifest, col) &&
		sameKeys(sess.Handed(), cur.Manifest, report.DatasetAdjustments)
	adjustments, err := r.adjustments(ctx, pb, cur, rows, revision, reproduce, m, dir)
	if errors.Is(err, ErrNotRepairable) {
		// The revision stays as it is: the objects the rebuild reproduced
		// are restored, nothing is published or deleted that it lists.
		if cerr := sess.Close(ctx); cerr != nil {
			return res, cerr
		}
		res.Outcome, res.Manifest, res.Uploaded = OutcomeUnchanged, cur.Manifest, sess.Uploaded()
		return res, err
	}
	if err != nil {
		return res, err
	}
	if err := w.Adjustments(adjustments); err != nil {
		return res, err
	}
	files, err := sess.Wait()
	if err != nil {
		return res, err
	}
	clock.done("upload_ms")
	totals, err := aggregate.CurrencyTotals(rows)
	if err != nil {
		return res, err
	}
	man := &report.Manifest{
		Format: report.ManifestFormat, Job: j.Name, PeriodStart: p.Start.UTC(), PeriodEnd: p.End.UTC(),
		Revision: revision, Reason: m.reason, GeneratedAt: j.now().UTC(), ToolVersion: j.Version, Sink: j.SinkURL,
		Partitions: col.Partitions, ItemsRead: col.ItemsRead, ItemsFingerprint: fp,
		ItemsFingerprintVersion: col.FingerprintVersion,
		Transactions:            st.Transactions, DuplicatesWithinPeriod: st.DuplicatesWithinPeriod,
		DuplicatesAcrossPeriods: st.DuplicatesAcrossPeriods, Rejects: st.Rejects, CrossPeriodDecisions: record,
		Totals: totals, Rates: &rates, ParquetLayout: layout, Files: files,
	}
	res.Manifest = man
	if err := keepsBilling(cur.Manifest, man, col, m); err != nil {
		// The revision stays as it is (for a repair, with the objects the
		// rebuild reproduced restored): nothing it lists is replaced.
		if cerr := sess.Close(ctx); cerr != nil {
			return res, cerr
		}
		res.Outcome, res.Manifest = OutcomeUnchanged, cur.Manifest
		if m.repair {
			res.Uploaded = sess.Uploaded() // what it restored
			return res, err
		}
		// A backfill: what it uploaded was cleaned up again.
		log.Warn("period kept as it is", "kind", m.kind, "revision", cur.Manifest.Revision, "err", err)
		return res, nil
	}
	if cur.Manifest != nil && man.SameContent(cur.Manifest) {
		// Rebuilt to the same objects (a backfill or repair of an
		// unchanged period, a re-pricing that changes no price): the
		// revision stands, with the rates it records (SPEC section 3:
		// only a period whose prices change is restated).
		if err := sess.Close(ctx); err != nil {
			return res, err
		}
		res.Outcome, res.Manifest = OutcomeUnchanged, cur.Manifest
		res.Uploaded = sess.Uploaded()
		reuploaded := "reuploaded"
		if r.opts.DryRun {
			reuploaded = "would_reupload"
		}
		log.Info("period unchanged", "kind", m.kind, "items_read", col.ItemsRead, "revision", cur.Manifest.Revision,
			reuploaded, len(res.Uploaded), "duration_ms", time.Since(started).Milliseconds())
		return res, nil
	}
	if err := sess.Commit(ctx, man); err != nil {
		return res, err
	}
	clock.done("commit_ms")
	res.Uploaded = sess.Uploaded()
	res.Outcome, res.Previous = OutcomePublished, cur.Manifest
	if r.opts.DryRun {
		res.Outcome = OutcomeDryRun
	}
	if j.OnSummary != nil && !r.opts.DryRun {
		for _, row := range rows {
			j.OnSummary(row)
		}
	}
	// A dry run wrote nothing: its line says what a run would have done.
	msg, uploaded := "period published", "uploaded"
	if r.opts.DryRun {
		msg, uploaded = "dry run: period would be published", "would_upload"
	}
	log.Info(msg, "kind", m.kind, "revision", revision, "reason", m.reason,
		"transactions", st.Transactions, "rejects", st.Rejects,
		"duplicates_within_period", st.DuplicatesWithinPeriod, "duplicates_across_periods", st.DuplicatesAcrossPeriods,
		"items_read", col.ItemsRead, "files", len(files), uploaded, len(res.Uploaded),
		"duration_ms", time.Since(started).Milliseconds())
	return res, nil
}

// encode writes every file of the period through w.
func (r *runner) encode(w *encode.Writer, agg *aggregate.Aggregator, rows []report.SummaryRow, st collect.Stats) error {
	if err := w.Summary(rows); err != nil {
		return err
	}
	if r.j.LineItems {
		lines, err := agg.Lines()
		if err != nil {
			return err
		}
		defer lines.Close()
		for lines.Next() {
			if err := w.Line(lines.Item()); err != nil {
				return err
			}
		}
		if err := lines.Err(); err != nil {
			return err
		}
		if err := w.EndLines(); err != nil {
			return err
		}
	}
	if st.RejectsFile != "" {
		if err := w.Rejects(st.RejectsFile, st.Rejects); err != nil {
			return err
		}
	}
	if st.DuplicatesFile != "" {
		return w.Duplicates(st.DuplicatesFile, st.DuplicatesLines)
	}
	return nil
}

// ErrNotRepairable is wrapped by the error of a repair that would have to
// publish a revision that loses part of the billing record (the current
// revision's adjustments, which nothing can read back): the period is
// left as it is, with what could be restored restored.
var ErrNotRepairable = errors.New("not repairable")

// adjustments returns the adjustments of the revision being built: the
// current revision's own when the build reproduces it, else what the new
// revision adds to the current one.
//
// The correction record is never dropped by a repair; this is the one
// place that decides it. A repair that reproduces the current revision
// (same items, same objects) restores its adjustments: read back from the
// adjustments Parquet, or, when that is missing or corrupt, rebuilt from
// the agencies' adjustments files (the same rows, so the same bytes and
// keys: the revision stands). When neither can be read, the repair fails
// with ErrNotRepairable rather than publish a revision without them. A
// repair that restates the period computes the new adjustments against
// the current summary, read from the summary Parquet or the agencies'
// summary files; only when neither can be read does the new revision go
// without adjustments (its items must be billed; the log says why).
func (r *runner) adjustments(ctx context.Context, pb *publish.Publisher, cur *publish.Current, rows []report.SummaryRow,
	revision int, reproduce bool, m mode, dir string) ([]report.AdjustmentRow, error) {
	if cur.Manifest == nil {
		return nil, nil
	}
	log := r.j.Log.With(LogPeriod, cur.Period.Name())
	if reproduce {
		prev, err := pb.PreviousAdjustments(ctx, cur, dir)
		if err == nil || !m.repair {
			return prev, err
		}
		rebuilt, aerr := pb.AgencyAdjustments(ctx, cur, dir)
		if aerr != nil {
			return nil, fmt.Errorf("%w: the adjustments of revision %d cannot be read back (%w) nor rebuilt from the agencies' adjustments files (%w); "+
				"revision %d is kept as it is (restore the adjustments file from a copy, then run verify --repair again)",
				ErrNotRepairable, cur.Manifest.Revision, err, aerr, cur.Manifest.Revision)
		}
		log.Info("rebuilt the current revision's adjustments from the agencies' files", "rows", len(rebuilt), "err", err)
		return rebuilt, nil
	}
	prevRows, err := pb.PreviousSummary(ctx, cur, dir)
	if err != nil && m.repair {
		var aerr error
		if prevRows, aerr = pb.AgencySummary(ctx, cur, dir); aerr != nil {
			log.Warn("the current revision's summary is unreadable and cannot be rebuilt from the agencies' files: the new revision has no adjustments",
				"err", err, "agencies_err", aerr)
			return nil, nil
		}
		log.Info("rebuilt the current revision's summary from the agencies' files", "rows", len(prevRows), "err", err)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return aggregate.Adjustments(prevRows, rows, int32(revision))
}

// sameKeys reports whether the keys of files are m's objects, leaving out those under
// the dataset skip and the agency files of that dataset's kind.
func sameKeys(files []report.FileInfo, m *report.Manifest, skip string) bool {
	cmp := func(a report.FileInfo, key string) int { return strings.Compare(a.Key, key) }
	listed := func(key string) bool {
		_, ok := slices.BinarySearchFunc(m.Files, key, cmp)
		return ok
	}
	if !slices.IsSortedFunc(m.Files, func(a, b report.FileInfo) int { return strings.Compare(a.Key, b.Key) }) {
		// A manifest written by hand: a set of its keys.
		set := make(map[string]bool, len(m.Files))
		for _, f := range m.Files {
			set[f.Key] = true
		}
		listed = func(key string) bool { return set[key] }
	}
	want := 0
	for _, f := range m.Files {
		if !isDatasetKey(f.Key, skip) {
			want++
		}
	}
	n := 0
	for _, f := range files {
		k := f.Key
		if isDatasetKey(k, skip) {
			continue
		}
		if !listed(k) {
			return false
		}
		n++
	}
	return n == want
}

// isDatasetKey reports whether key is an object of dataset: under its
// prefix, or an agency's file of that kind ("adjustments-H.csv").
func isDatasetKey(key, dataset string) bool {
	if strings.HasPrefix(key, dataset+"/") {
		return true
	}
	_, ok := report.AgencySegment(key)
	return ok && strings.HasPrefix(key[strings.LastIndexByte(key, '/')+1:], dataset+"-")
}

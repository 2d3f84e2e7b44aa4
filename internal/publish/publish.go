// Package publish delivers a period's encoded files to the sink as one
// revision, and is the only code that writes there.
//
// The protocol, for period P:
//
//  1. Read the published manifest of P, if any, with its ETag, and list
//     manifests/period=P/ for the intents of interrupted publications.
//  2. Check the fence (this run still holds its lease), then write this
//     run's intent, manifests/period=P/pending-RUN.json, naming the agency
//     folders it will write.
//  3. Upload each object (its name carries its content hash, so the same
//     content is the same object), checking the fence before each, and
//     skipping the objects the current manifest already lists.
//  4. Check the fence, then write the manifest: If-None-Match: * when P had
//     none, If-Match: <the ETag read in 1> otherwise. Two publishers can
//     never blindly overwrite each other; a response lost in transit is
//     recognised by reading the manifest back.
//  5. Delete what the new manifest does not list: the previous revision's
//     objects, and anything under P's dataset prefixes and under the agency
//     folders that interrupted publications named; then delete the intents.
//
// A reader that globs a dataset prefix therefore sees exactly the latest
// revision once step 5 is done; a reader that follows manifests sees it at
// step 4. Nothing a manifest lists ever changes.
package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/encode"
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

// Session is one publication of a period in progress.
type Session struct {
	pb      *Publisher
	ctx     context.Context
	cancel  context.CancelCauseFunc
	cur     *Current
	p       report.Period
	restore map[string]bool
	skip    map[string]string // key -> sha256 of the current manifest's objects
	queue   chan encode.File
	done    chan struct{}
	err     error // first upload error, read after done
	files   []report.FileInfo
	waited  bool
	uploads int

	mu       sync.Mutex
	uploaded []report.FileInfo

	intentBody    []byte
	intentOnce    sync.Once
	intentErr     error
	intentWritten atomic.Bool
}

// Options of a publication.
type Options struct {
	// Restore names objects to upload even though the current manifest
	// lists them (verify --repair restoring missing or corrupt ones).
	Restore map[string]bool
}

// Begin starts publishing a new revision of cur.Period, whose agency
// folders are agencies (ids, not escaped): it checks the fence. The
// intent naming those folders is written before the first object is
// uploaded (a rebuild whose objects are all in place writes nothing).
// Upload each file, then Commit (or Close), or Abort.
func (pb *Publisher) Begin(ctx context.Context, cur *Current, agencies []string, o Options) (*Session, error) {
	p := cur.Period
	if err := pb.fence(); err != nil {
		return nil, fmt.Errorf("publish %s: %w", p.Name(), err)
	}
	esc := make([]string, 0, len(agencies))
	for _, a := range agencies {
		esc = append(esc, agencySegment(a, p))
	}
	body, err := json.Marshal(intent{RunID: pb.RunID, StartedAt: pb.now().UTC(), Agencies: esc})
	if err != nil {
		return nil, fmt.Errorf("publish %s: intent: %w", p.Name(), err)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Session{pb: pb, ctx: sctx, cancel: cancel, cur: cur, p: p, restore: o.Restore, intentBody: body,
		skip: map[string]string{}, queue: make(chan encode.File), done: make(chan struct{})}
	if cur.Manifest != nil {
		for _, f := range cur.Manifest.Files {
			s.skip[f.Key] = f.SHA256
		}
	}
	go s.run()
	return s, nil
}

// writeIntent writes the session's intent, once, before its first upload.
func (s *Session) writeIntent() error {
	s.intentOnce.Do(func() {
		_, err := s.pb.out().PutBytes(s.ctx, report.IntentKey(s.p, s.pb.RunID), s.intentBody, sink.PutOptions{ContentType: encode.TypeJSON})
		if err != nil {
			s.intentErr = fmt.Errorf("publish %s: %w", s.p.Name(), err)
			return
		}
		s.intentWritten.Store(true)
	})
	return s.intentErr
}

// intents returns the intents to delete once the period is clean: the
// interrupted ones, and this session's if it wrote one.
func (s *Session) intents() []string {
	out := slices.Clone(s.cur.Intents)
	if s.intentWritten.Load() {
		out = append(out, report.IntentKey(s.p, s.pb.RunID))
	}
	return out
}

// agencySegment returns the escaped agency id of a's folder in p.
func agencySegment(a string, p report.Period) string {
	esc, _ := report.AgencySegment(report.AgencyPrefix(a, p))
	return esc
}

// run uploads the queued files with Concurrency workers.
func (s *Session) run() {
	defer close(s.done)
	results := make(chan error)
	inflight := 0
	var firstErr error
	record := func(err error) {
		inflight--
		if err != nil && firstErr == nil {
			firstErr = err
			s.cancel(err)
		}
	}
	for f := range s.queue {
		for inflight == s.pb.workers() {
			record(<-results)
		}
		if firstErr != nil {
			removeTemp(f)
			continue
		}
		inflight++
		s.uploads++
		go func() { results <- s.upload(f) }()
	}
	for inflight > 0 {
		record(<-results)
	}
	s.err = firstErr
}

// upload puts one file, unless the current manifest lists it already.
func (s *Session) upload(f encode.File) error {
	defer removeTemp(f)
	if sha, ok := s.skip[f.Key]; ok && sha == f.SHA256 && !s.restore[f.Key] {
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	if err := s.pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	if err := s.writeIntent(); err != nil {
		return err
	}
	// Writing the intent (or waiting for another upload to write it) may
	// have taken long: a run stopped meanwhile must not write after its
	// lease expired. Checked again right before the object's write.
	if err := s.pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	if _, err := s.pb.out().PutFile(s.ctx, f.Key, f.Path, sink.PutOptions{ContentType: f.ContentType}); err != nil {
		if cause := context.Cause(s.ctx); cause != nil && !errors.Is(err, cause) && s.ctx.Err() != nil {
			return cause
		}
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	s.mu.Lock()
	s.uploaded = append(s.uploaded, f.Info())
	s.mu.Unlock()
	crashpoint.Hit(crashpoint.AfterUpload)
	if s.cur.Manifest != nil {
		crashpoint.Hit(crashpoint.MidRestatement)
	}
	return nil
}

// Uploaded returns the objects actually written (not skipped because the
// current manifest lists them), sorted by key. Call it after Wait.
func (s *Session) Uploaded() []report.FileInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.uploaded)
	slices.SortFunc(out, func(a, b report.FileInfo) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Upload queues f (its temp file is removed once uploaded). It returns the
// first upload error so far, after which nothing more is uploaded.
func (s *Session) Upload(f encode.File) error {
	s.files = append(s.files, f.Info())
	select {
	case s.queue <- f:
		return nil
	case <-s.done:
		removeTemp(f)
		return s.err
	case <-s.ctx.Done():
		removeTemp(f)
		return context.Cause(s.ctx)
	}
}

// Wait waits for the queued uploads and returns the files of the revision,
// sorted by key.
func (s *Session) Wait() ([]report.FileInfo, error) {
	if !s.waited {
		s.waited = true
		close(s.queue)
		<-s.done
	}
	if s.err != nil {
		return nil, s.err
	}
	files := slices.Clone(s.files)
	slices.SortFunc(files, func(a, b report.FileInfo) int { return strings.Compare(a.Key, b.Key) })
	return files, nil
}

// Abort stops the uploads and waits for them. The intent stays, so that
// the next publication of the period cleans up what was uploaded.
func (s *Session) Abort() {
	s.cancel(errors.New("publication aborted"))
	s.Wait()
}

// Commit writes m as the period's manifest and cleans up. m.Files must be
// what Wait returned; Commit sets m.PreviousSHA256, m.PreviousItemsRead and
// m.ReplacedFiles.
func (s *Session) Commit(ctx context.Context, m *report.Manifest) error {
	if _, err := s.Wait(); err != nil {
		return err
	}
	p, pb := s.p, s.pb
	var prevKeys []string
	if prev := s.cur.Manifest; prev != nil {
		m.PreviousSHA256 = report.SHA256Hex(s.cur.Raw)
		m.PreviousItemsRead = prev.ItemsRead
		keep := keySet(m.Files)
		m.ReplacedFiles = nil
		for _, f := range prev.Files {
			if !keep[f.Key] {
				m.ReplacedFiles = append(m.ReplacedFiles, f.Key)
			}
		}
		prevKeys = m.ReplacedFiles
	}
	body, parts, err := m.Encode()
	if err != nil {
		return err
	}
	if prev := s.cur.Manifest; prev != nil {
		prevKeys = append(slices.Clone(prevKeys), replacedParts(prev, m)...)
	}
	if err := s.putParts(ctx, parts); err != nil {
		return err
	}
	if err := pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", p.Name(), err)
	}
	opts := sink.PutOptions{ContentType: encode.TypeJSON, IfNoneMatch: s.cur.Manifest == nil, IfMatch: s.cur.ETag}
	if s.cur.Manifest == nil {
		opts.IfMatch = ""
	}
	_, err = pb.out().PutBytes(ctx, report.ManifestKey(p), body, opts)
	if errors.Is(err, sink.ErrPrecondition) {
		// Ours, whose response was lost, or another publisher's?
		raw, _, rerr := pb.Bucket.ReadAll(ctx, report.ManifestKey(p), maxManifestBytes)
		if rerr != nil || string(raw) != string(body) {
			return fmt.Errorf("publish %s: %w (%w)", p.Name(), ErrRaced, err)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("publish %s: manifest: %w", p.Name(), err)
	}
	pb.Log.Debug("manifest written", logPeriod, p.Name(), "revision", m.Revision)
	crashpoint.Hit(crashpoint.AfterManifest)
	return pb.cleanup(ctx, p, m, prevKeys, s.intents())
}

// putParts uploads the manifest's parts (report.Manifest.Encode) that the
// current manifest does not name already, after the session's intent (so
// that the parts of an interrupted publication are cleaned up).
func (s *Session) putParts(ctx context.Context, parts []report.EncodedPart) error {
	have := map[string]bool{}
	if s.cur.Manifest != nil {
		have = s.cur.Manifest.PartKeys()
	}
	for _, part := range parts {
		if have[part.Key] {
			continue
		}
		if err := s.pb.fence(); err != nil {
			return fmt.Errorf("publish %s: %w", s.p.Name(), err)
		}
		if err := s.writeIntent(); err != nil {
			return err
		}
		if _, err := s.pb.out().PutBytes(ctx, part.Key, part.Body, sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
			return fmt.Errorf("publish %s: manifest part: %w", s.p.Name(), err)
		}
	}
	return nil
}

// replacedParts returns the parts of prev that m does not name.
func replacedParts(prev, m *report.Manifest) []string {
	keep := m.PartKeys()
	var out []string
	for _, part := range prev.Parts {
		if !keep[part.Key] {
			out = append(out, part.Key)
		}
	}
	return out
}

// Close ends a publication that found nothing to publish (the rebuilt
// revision equals the current one): it cleans up as Commit would, without
// writing a manifest.
func (s *Session) Close(ctx context.Context) error {
	if _, err := s.Wait(); err != nil {
		return err
	}
	return s.pb.cleanup(ctx, s.p, s.cur.Manifest, nil, s.intents())
}

// Clean removes what interrupted publications left next to the current
// revision of cur (a period whose items did not change, but whose last
// publication did not finish its cleanup).
func (pb *Publisher) Clean(ctx context.Context, cur *Current) error {
	if len(cur.Intents) == 0 || cur.Manifest == nil {
		return nil
	}
	if err := pb.fence(); err != nil {
		return fmt.Errorf("clean %s: %w", cur.Period.Name(), err)
	}
	return pb.cleanup(ctx, cur.Period, cur.Manifest, nil, cur.Intents)
}

// cleanup deletes every object of p that m does not list: the keys of the
// previous revision that m replaced, then whatever is under p's dataset
// prefixes and the agency folders the intents named; the intents last.
func (pb *Publisher) cleanup(ctx context.Context, p report.Period, m *report.Manifest, replaced, intents []string) error {
	keep := keySet(m.Files)
	doomed := slices.Clone(replaced)
	prefixes := make([]string, 0, len(report.Datasets))
	for _, d := range report.Datasets {
		prefixes = append(prefixes, report.DatasetPrefix(d, p))
	}
	mine := report.IntentKey(p, pb.RunID)
	for _, key := range intents {
		if key == mine {
			continue // this run's uploads are all listed
		}
		in, err := pb.readIntent(ctx, key)
		if err != nil {
			return err
		}
		for _, esc := range in.Agencies {
			prefixes = append(prefixes, report.EscapedAgencyPrefix(esc, p))
		}
	}
	slices.Sort(prefixes)
	for _, prefix := range slices.Compact(prefixes) {
		objs, err := pb.Bucket.List(ctx, prefix)
		if err != nil {
			return fmt.Errorf("clean %s: %w", p.Name(), err)
		}
		for _, o := range objs {
			if !keep[o.Key] {
				doomed = append(doomed, o.Key)
			}
		}
	}
	strays, err := pb.strayParts(ctx, p, m)
	if err != nil {
		return fmt.Errorf("clean %s: %w", p.Name(), err)
	}
	doomed = append(doomed, strays...)
	slices.Sort(doomed)
	doomed = slices.Compact(doomed)
	if err := pb.deleteAll(ctx, p, doomed); err != nil {
		return err
	}
	if len(doomed) > 0 {
		pb.Log.Info("deleted objects the manifest does not list", logPeriod, p.Name(), logCount, len(doomed))
	}
	if err := pb.deleteAll(ctx, p, intents); err != nil {
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

// deleteAll deletes keys, Concurrency at a time, checking the fence.
func (pb *Publisher) deleteAll(ctx context.Context, p report.Period, keys []string) error {
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
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
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
			if err := pb.out().Delete(ctx, key); err != nil {
				cancel(fmt.Errorf("clean %s: %w", p.Name(), err))
			}
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	return context.Cause(ctx)
}

func keySet(files []report.FileInfo) map[string]bool {
	m := make(map[string]bool, len(files))
	for _, f := range files {
		m[f.Key] = true
	}
	return m
}

// removeTemp removes an uploaded (or abandoned) temp file.
func removeTemp(f encode.File) {
	if f.Path != "" {
		_ = os.Remove(f.Path)
	}
}

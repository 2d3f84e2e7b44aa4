package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/warm"
)

// Session is one publication of a period in progress.
type Session struct {
	pb      *Publisher
	ctx     context.Context
	cancel  context.CancelCauseFunc
	cur     *Current
	p       report.Period
	restore map[string]bool
	skip    fileIndex // the current manifest's objects
	queue   chan queued
	done    chan struct{}
	err     error // first upload error, read after done
	waited  bool
	uploads int

	// files are the revision's objects in the order handed to Upload (by
	// key once Wait sorted them), and uploaded tells which of them were
	// written: one entry per object, never a copy of the list (a period
	// of 100,000 agencies has 400,000 objects).
	mu       sync.Mutex
	files    []report.FileInfo
	uploaded []bool
	sorted   bool

	// The intent: written before the first upload, rewritten when an
	// upload goes to an agency folder it does not name yet.
	intentMu       sync.Mutex
	intentStarted  time.Time
	intentAgencies []string        // escaped, in the order named
	intentNamed    map[string]bool // escaped
	intentWritten  bool
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
	// A cleanup of the current revision cut short is finished first: the
	// manifest this publication replaces names the objects it replaced.
	if err := pb.Clean(ctx, cur); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Session{pb: pb, ctx: sctx, cancel: cancel, cur: cur, p: p, restore: o.Restore,
		queue: make(chan queued), done: make(chan struct{}),
		intentStarted: pb.now().UTC(), intentNamed: map[string]bool{}}
	for _, a := range agencies {
		s.name(agencySegment(a, p))
	}
	if cur.Manifest != nil {
		s.skip = newFileIndex(cur.Manifest.Files)
	}
	go s.run()
	return s, nil
}

// name adds the escaped agency esc to the intent's folders; it reports
// whether esc is new. Call it with intentMu held (or before the uploads).
func (s *Session) name(esc string) bool {
	if s.intentNamed[esc] {
		return false
	}
	s.intentNamed[esc] = true
	s.intentAgencies = append(s.intentAgencies, esc)
	return true
}

// writeIntent makes sure the session's intent is in the sink and names the
// agency folder of key ("" for none) before anything is written there: it
// writes the intent the first time, and rewrites it when key is in a
// folder it does not name yet (a vanished agency's adjustments file).
func (s *Session) writeIntent(ctx context.Context, key string) error {
	s.intentMu.Lock()
	defer s.intentMu.Unlock()
	fresh := false
	if esc, ok := report.AgencySegment(key); ok {
		fresh = s.name(esc)
	}
	if s.intentWritten && !fresh {
		return nil
	}
	body, err := json.Marshal(intent{RunID: s.pb.RunID, StartedAt: s.intentStarted, Agencies: s.intentAgencies})
	if err != nil {
		return fmt.Errorf("publish %s: intent: %w", s.p.Name(), err)
	}
	if _, err := s.pb.out().PutBytes(ctx, report.IntentKey(s.p, s.pb.RunID), body, sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	s.intentWritten = true
	return nil
}

// intents returns the intents to delete once the period is clean: the
// interrupted ones, and this session's if it wrote one.
func (s *Session) intents() []string {
	out := slices.Clone(s.cur.Intents)
	s.intentMu.Lock()
	defer s.intentMu.Unlock()
	if s.intentWritten {
		out = append(out, report.IntentKey(s.p, s.pb.RunID))
	}
	return out
}

// agencySegment returns the escaped agency id of a's folder in p: a
// itself when escaping leaves it as it is, else a string of its own (not
// a slice of the folder's key, twice its size; the intent holds one per
// agency of the period).
func agencySegment(a string, p report.Period) string {
	esc, _ := report.AgencySegment(report.AgencyPrefix(a, p))
	if esc == a {
		return a
	}
	return strings.Clone(esc)
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
	for q := range s.queue {
		for inflight == s.pb.workers() {
			record(<-results)
		}
		if firstErr != nil {
			removeTemp(q.f)
			continue
		}
		inflight++
		s.uploads++
		warm.Go(func() { results <- s.upload(q.f, q.i) })
	}
	for inflight > 0 {
		record(<-results)
	}
	s.err = firstErr
}

// queued is a file handed to Upload and its index in Session.files.
type queued struct {
	f encode.File
	i int
}

// upload puts one file, the i-th handed to Upload, unless the current
// manifest lists it already.
func (s *Session) upload(f encode.File, i int) (err error) {
	defer func() {
		if err != nil {
			// An HTTP client may still read the body of a failed request
			// after Put returns: its memory goes to the GC, not to the
			// next file.
			f.Data = nil
		}
		removeTemp(f)
	}()
	if cur, ok := s.skip.find(f.Key); ok && cur.SHA256 == f.SHA256 && !s.restore[f.Key] {
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	if err := s.pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	if err := s.writeIntent(s.ctx, f.Key); err != nil {
		return err
	}
	// Writing the intent (or waiting for another upload to write it) may
	// have taken long: a run stopped meanwhile must not write after its
	// lease expired. Checked again right before the object's write.
	if err := s.pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	if _, err := PutEncoded(s.ctx, s.pb.out(), f); err != nil {
		if cause := context.Cause(s.ctx); cause != nil && !errors.Is(err, cause) && s.ctx.Err() != nil {
			return cause
		}
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	s.mu.Lock()
	s.uploaded[i] = true
	s.mu.Unlock()
	crashpoint.Hit(crashpoint.AfterUpload)
	if s.cur.Manifest != nil {
		crashpoint.Hit(crashpoint.MidRestatement)
	}
	return nil
}

// Uploaded returns the objects actually written (not skipped because the
// current manifest lists them), sorted by key. Call it after Wait. When
// every object was written it is the slice Wait returned (not a copy):
// neither may be modified.
func (s *Session) Uploaded() []report.FileInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sortFiles()
	n := 0
	for _, up := range s.uploaded {
		if up {
			n++
		}
	}
	if n == len(s.files) {
		return s.files
	}
	out := make([]report.FileInfo, 0, n)
	for i, f := range s.files {
		if s.uploaded[i] {
			out = append(out, f)
		}
	}
	return out
}

// Handed returns the files handed to Upload so far, in that order: the
// session's own list (not a copy), to be read before the next Upload.
func (s *Session) Handed() []report.FileInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files
}

// sortFiles sorts files by key, their uploaded flags with them, once the
// uploads are over. Call it with mu held.
func (s *Session) sortFiles() {
	if !s.sorted {
		sort.Sort(byKey{s.files, s.uploaded})
		s.sorted = true
	}
}

// byKey sorts a session's files and their uploaded flags by key.
type byKey struct {
	files    []report.FileInfo
	uploaded []bool
}

func (b byKey) Len() int           { return len(b.files) }
func (b byKey) Less(i, j int) bool { return b.files[i].Key < b.files[j].Key }
func (b byKey) Swap(i, j int) {
	b.files[i], b.files[j] = b.files[j], b.files[i]
	b.uploaded[i], b.uploaded[j] = b.uploaded[j], b.uploaded[i]
}

// Upload queues f (its temp file is removed once uploaded). It returns the
// first upload error so far, after which nothing more is uploaded.
func (s *Session) Upload(f encode.File) error {
	info := f.Info()
	if cur, ok := s.skip.find(f.Key); ok && cur.SHA256 == f.SHA256 {
		// The current revision's object: its strings, not a second copy
		// (a rebuild of a big period holds both lists).
		info.Key, info.SHA256 = cur.Key, cur.SHA256
	}
	s.mu.Lock()
	i := len(s.files)
	s.files = append(s.files, info)
	s.uploaded = append(s.uploaded, false)
	s.mu.Unlock()
	select {
	case s.queue <- queued{f, i}:
		return nil
	case <-s.done:
		removeTemp(f)
		return s.err
	case <-s.ctx.Done():
		removeTemp(f)
		return context.Cause(s.ctx)
	}
}

// Wait waits for the queued uploads, makes them durable (the sink's Sync)
// and returns the files of the revision, sorted by key: the session's own
// list, not a copy (it may not be modified).
func (s *Session) Wait() ([]report.FileInfo, error) {
	if !s.waited {
		s.waited = true
		close(s.queue)
		<-s.done
		if s.err == nil && s.uploads > 0 {
			if err := s.pb.out().Sync(s.ctx); err != nil {
				s.err = fmt.Errorf("publish %s: %w", s.p.Name(), err)
			}
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sortFiles()
	return s.files, nil
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
	if prev := s.cur.Manifest; prev != nil {
		m.PreviousSHA256 = report.SHA256Hex(s.cur.Raw)
		m.PreviousItemsRead = prev.ItemsRead
		keep := newFileIndex(m.Files)
		m.ReplacedFiles = nil
		for _, f := range prev.Files {
			if !keep.has(f.Key) {
				m.ReplacedFiles = append(m.ReplacedFiles, f.Key)
			}
		}
	}
	// Each part is uploaded as soon as it is encoded (not all held).
	have := map[string]bool{}
	if s.cur.Manifest != nil {
		have = s.cur.Manifest.PartKeys()
	}
	body, err := m.EncodeTo(func(part report.EncodedPart) error { return s.putPart(ctx, part, have) })
	if err != nil {
		return err
	}
	if err := pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", p.Name(), err)
	}
	if len(m.ReplacedFiles) > 0 {
		// The cleanup this manifest makes pending must be visible until
		// it is done, even for a revision that only drops objects.
		if err := s.writeIntent(ctx, ""); err != nil {
			return err
		}
		if err := pb.fence(); err != nil {
			return fmt.Errorf("publish %s: %w", p.Name(), err)
		}
	}
	// The monthly close takes the new revision in from its due marker,
	// written first, so that a crash after the manifest leaves it.
	if _, err := pb.out().PutBytes(ctx, report.StatementDueKey(p), []byte("{}\n"), sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
		return fmt.Errorf("publish %s: due marker: %w", p.Name(), err)
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
	return pb.cleanup(ctx, p, m, s.intents(), true)
}

// putPart uploads a manifest part (report.Manifest.EncodeTo) unless the
// current manifest names it already (have), after the session's intent
// (so that the parts of an interrupted publication are cleaned up).
func (s *Session) putPart(ctx context.Context, part report.EncodedPart, have map[string]bool) error {
	if have[part.Key] {
		return nil
	}
	if err := s.pb.fence(); err != nil {
		return fmt.Errorf("publish %s: %w", s.p.Name(), err)
	}
	if err := s.writeIntent(ctx, ""); err != nil {
		return err
	}
	if _, err := s.pb.out().PutBytes(ctx, part.Key, part.Body, sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
		return fmt.Errorf("publish %s: manifest part: %w", s.p.Name(), err)
	}
	return nil
}

// Close ends a publication that found nothing to publish (the rebuilt
// revision equals the current one): it cleans up as Commit would, without
// writing a manifest.
func (s *Session) Close(ctx context.Context) error {
	if _, err := s.Wait(); err != nil {
		return err
	}
	return s.pb.cleanup(ctx, s.p, s.cur.Manifest, s.intents(), false)
}

// removeTemp releases an uploaded (or abandoned) file.
func removeTemp(f encode.File) { f.Discard() }

// PutEncoded stores the encoded file f at its key in b, from its temp file
// or from memory, as a deferred Put: b's Sync makes it durable
// (Session.Wait; a month's statements: monthclose).
func PutEncoded(ctx context.Context, b *sink.Bucket, f encode.File) (sink.Attrs, error) {
	opts := sink.PutOptions{ContentType: f.ContentType, Defer: true}
	if f.Path == "" {
		return b.PutBytes(ctx, f.Key, f.Data, opts)
	}
	return b.PutFile(ctx, f.Key, f.Path, opts)
}

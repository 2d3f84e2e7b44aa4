package monthclose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// What a month's cleanup deletes (the month's counterpart of the rule in
// internal/publish/cleanup.go, stated and enforced here only).
//
// Once month manifest M is published, the month's objects are exactly
// M.Files and M's parts (Manifest.Keys). The cleanup deletes, and nothing
// else:
//
//   - every object under statements/month=M/ and manifests/month=M/ that
//     M does not list (but the manifest, its parts and the intents);
//   - every key of M.ReplacedFiles (the previous revision's objects, agency
//     folders included) that M does not list;
//   - every key a pending intent names that M does not list (an intent
//     names every object its publication uploads, so an interrupted
//     publication's objects in agency folders are found without listing
//     them);
//
// then the intents. A cleanup cut short leaves its intent, and the next
// Update finishes it. A final month is never published again, but its
// pending cleanup is still finished.

// monthIntent is the body of manifests/month=M/pending-RUN.json.
type monthIntent struct {
	RunID string   `json:"run_id"`
	Keys  []string `json:"keys"`
}

// publish uploads man's new files (the agency files are uploaded already,
// by up: agencyput.go), writes man as the month's manifest with a
// conditional write, and cleans up. It returns how many objects it
// uploaded.
func (c *Closer) publish(ctx context.Context, cur *current, man *Manifest, files []encode.File, up *agencyPuts) (int, error) {
	m := man.Month
	if cur != nil && cur.m != nil {
		man.PreviousSHA256 = report.SHA256Hex(cur.raw)
		man.ReplacedFiles = nil
		for _, f := range cur.m.Files {
			if !man.hasFile(f.Key) {
				man.ReplacedFiles = append(man.ReplacedFiles, f.Key)
			}
		}
	}
	man.GeneratedAt, man.ToolVersion = c.now(), c.Version
	var todo []encode.File
	for _, f := range files {
		if !cur.hasFile(f.Key) {
			todo = append(todo, f)
		}
	}
	mine := report.MonthIntentKey(m, c.RunID)
	// The intent names the month's files uploaded (its parts, up.intents,
	// the agency files); the manifest's parts, under manifests/month=M/,
	// are found by listing it (unlisted).
	if len(todo) > 0 || up.n > 0 || len(man.ReplacedFiles) > 0 || man.parted() {
		in := monthIntent{RunID: c.RunID}
		for _, f := range todo {
			in.Keys = append(in.Keys, f.Key)
		}
		ib, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		if err := c.put(ctx, mine, ib, sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
			return 0, fmt.Errorf("publish the statements of %s: intent: %w", m, err)
		}
	}
	if err := c.upload(ctx, todo); err != nil {
		return 0, fmt.Errorf("publish the statements of %s: %w", m, err)
	}
	// The parts before the manifest that names them, each put as it is
	// encoded: content-named, so a part already there is the same bytes.
	body, err := man.EncodeTo(func(p report.EncodedPart) error {
		if err := c.put(ctx, p.Key, p.Body, sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
			return fmt.Errorf("publish the statements of %s: manifest part: %w", m, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	opts := sink.PutOptions{ContentType: encode.TypeJSON, IfNoneMatch: true}
	if cur != nil && cur.m != nil {
		opts = sink.PutOptions{ContentType: encode.TypeJSON, IfMatch: cur.etag}
	}
	err = c.put(ctx, report.MonthManifestKey(m), body, opts)
	if errors.Is(err, sink.ErrPrecondition) {
		raw, _, rerr := c.bucket().ReadAll(ctx, report.MonthManifestKey(m), maxManifestBytes)
		if rerr != nil || string(raw) != string(body) {
			return 0, fmt.Errorf("publish the statements of %s: the manifest was replaced by another publisher (%w)", m, err)
		}
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("publish the statements of %s: manifest: %w", m, err)
	}
	crashpoint.Hit(crashpoint.MonthAfterManifest)
	intents := []string{}
	if cur != nil {
		intents = append(intents, cur.intents...)
	}
	intents = append(intents, mine)
	next := &current{month: m, m: man, raw: body, intents: intents, named: up.intents}
	n := len(todo) + up.n
	if err := c.cleanup(ctx, next, true); err != nil {
		return n, err
	}
	return n, nil
}

// finishCleanup finishes a cleanup of cur's revision that was cut short
// (no-op when none is pending).
func (c *Closer) finishCleanup(ctx context.Context, cur *current) error {
	if cur == nil || cur.m == nil || (len(cur.intents) == 0 && len(cur.m.ReplacedFiles) == 0) {
		return nil
	}
	return c.cleanup(ctx, cur, false)
}

// unlisted returns the objects under the month's statements and month
// manifest prefixes that man does not list: neither its files and parts
// (Manifest.Keys; the keys it lists as replaced are unlisted) nor the
// manifest itself nor an intent (whose cleanup is the month's
// publication's). Sorted.
func (c *Closer) unlisted(ctx context.Context, man *Manifest) ([]string, error) {
	m := man.Month
	var out []string
	for _, prefix := range []string{report.StatementsPrefix(m), report.MonthManifestPrefix(m)} {
		objs, err := c.bucket().List(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if !man.hasKey(o.Key) && o.Key != report.MonthManifestKey(m) && !report.IsMonthIntentKey(m, o.Key) {
				out = append(out, o.Key)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// readIntent reads the intent at key: a zero one when it is gone (its
// cleanup is done). An intent that cannot be read stops every cleanup of
// its month, so the error names it and says what to do.
func (c *Closer) readIntent(ctx context.Context, key string) (monthIntent, error) {
	var in monthIntent
	raw, _, err := c.bucket().ReadAll(ctx, key, maxManifestBytes)
	if errors.Is(err, sink.ErrNotFound) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("read intent: %w", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("intent %s: %w (it names the objects an interrupted publication uploaded, for the cleanup; "+
			"delete the objects it names that the month manifest does not list, if you can read them, then the intent)", c.bucket().URL(key), err)
	}
	return in, nil
}

// cleanup deletes what cur.m does not list (see above), then the intents.
func (c *Closer) cleanup(ctx context.Context, cur *current, always bool) error {
	m, man := cur.month, cur.m
	del, err := c.unlisted(ctx, man)
	if err != nil {
		return fmt.Errorf("clean the statements of %s: %w", m, err)
	}
	if !always && len(cur.intents) == 0 && len(del) == 0 {
		return nil
	}
	for _, k := range man.ReplacedFiles {
		if !man.hasKey(k) {
			del = append(del, k)
		}
	}
	for _, key := range cur.intents {
		in, err := c.readIntent(ctx, key)
		if err != nil {
			return fmt.Errorf("clean the statements of %s: %w", m, err)
		}
		for _, k := range in.Keys {
			if !man.hasKey(k) {
				del = append(del, k)
			}
		}
	}
	slices.Sort(del)
	del = slices.Compact(del)
	if err := c.deleteDeferred(ctx, del); err != nil {
		return fmt.Errorf("clean the statements of %s: %w", m, err)
	}
	if len(del) > 0 {
		// The deletes may wait for the sink's Sync to be durable: the
		// intents go only after it, so that a crash before it leaves
		// them for the next cleanup.
		if err := c.bucket().Sync(ctx); err != nil {
			return fmt.Errorf("clean the statements of %s: %w", m, err)
		}
		c.Log.Info("deleted statement objects the month manifest does not list", "month", m, "count", len(del))
	}
	if err := c.deleteAll(ctx, append(cur.named, cur.intents...)); err != nil {
		return fmt.Errorf("clean the statements of %s: %w", m, err)
	}
	cur.intents, cur.named = nil, nil
	crashpoint.Hit(crashpoint.MonthAfterCleanup)
	return nil
}

func (c *Closer) put(ctx context.Context, key string, body []byte, opts sink.PutOptions) error {
	if err := c.fence(); err != nil {
		return err
	}
	_, err := c.bucket().PutBytes(ctx, key, body, opts)
	return err
}

// upload puts files, Concurrency at a time, checking the fence, and
// makes them durable (the sink's Sync) before it returns.
func (c *Closer) upload(ctx context.Context, files []encode.File) error {
	err := c.each(len(files), func(i int) error {
		f := files[i]
		if _, err := c.bucket().PutFile(ctx, f.Key, f.Path, sink.PutOptions{ContentType: f.ContentType, Defer: true}); err != nil {
			return err
		}
		crashpoint.Hit(crashpoint.MonthAfterUpload)
		return nil
	})
	if err != nil || len(files) == 0 {
		return err
	}
	return c.bucket().Sync(ctx)
}

// deleteAll deletes keys, Concurrency at a time, checking the fence.
func (c *Closer) deleteAll(ctx context.Context, keys []string) error {
	return c.each(len(keys), func(i int) error {
		if err := c.bucket().Delete(ctx, keys[i]); err != nil && !errors.Is(err, sink.ErrNotFound) {
			return err
		}
		return nil
	})
}

// deleteDeferred is deleteAll with deletes whose durability may wait for
// the sink's Sync.
func (c *Closer) deleteDeferred(ctx context.Context, keys []string) error {
	return c.each(len(keys), func(i int) error {
		if err := c.bucket().DeleteDeferred(ctx, keys[i]); err != nil && !errors.Is(err, sink.ErrNotFound) {
			return err
		}
		return nil
	})
}

// each calls write(i) for i in [0, n), Concurrency at a time, each after a
// check of the fence, and joins the errors.
func (c *Closer) each(n int, write func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(c.Concurrency, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := c.fence(); err != nil {
				errs[i] = err
				return
			}
			errs[i] = write(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func keySet(files []report.FileInfo) map[string]bool {
	m := make(map[string]bool, len(files))
	for _, f := range files {
		m[f.Key] = true
	}
	return m
}

package monthclose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/warm"
)

// How a publication uploads its agencies' files (stated and enforced here
// only).
//
// A month of many agencies has as many agency folders, and a key there is
// found again only through an intent that names it (publish.go). The
// agency files are uploaded as they are rendered, in parts: the uploader
// gathers the files rendered (partFiles files, or partBytes bytes once
// reached), writes an intent naming them (report.MonthIntentPartKey, a
// durable put), and only then puts them, Concurrency at a time, while the
// next part gathers. So every agency file in the sink is named by an
// intent written before it, as with one intent, and no agency file is
// held on disk twice (a scratch copy, then the sink's). The publication's
// other intent and its cleanup (publish) treat the parts as its own: the
// cleanup deletes them with the rest, without reading them (every key
// they name is an uploaded file the manifest lists). A publication that
// fails while it renders or uploads deletes what it uploaded, then its
// parts (abort), when it still may (not with its lease lost or its context
// cancelled); what it leaves, and what a crash or a later failure (the
// manifest's write) leaves, the next close's cleanup deletes.

// The most files and bytes one part of a publication's intent names: a
// part's files are held in memory until its intent is written.
var (
	partFiles       = 1024
	partBytes int64 = 8 << 20
)

// agencyPuts uploads a publication's agency files as they are rendered.
// add is called from many goroutines; finish once, after the last add.
type agencyPuts struct {
	c     *Closer
	ctx   context.Context
	month string
	have  func(key string) bool // the key is a file of the current revision: not uploaded again

	in   chan encode.File
	done chan struct{}

	mu      sync.Mutex
	err     error    // the first error; add refuses files after it
	intents []string // the parts written, in order
	n       int      // files uploaded
}

// newAgencyPuts starts the uploader of month m's agency files; have
// reports the keys the sink holds already as a file of the month's
// current revision.
func (c *Closer) newAgencyPuts(ctx context.Context, m string, have func(string) bool) *agencyPuts {
	u := &agencyPuts{c: c, ctx: ctx, month: m, have: have, in: make(chan encode.File, 64), done: make(chan struct{})}
	go u.run()
	return u
}

// add hands f over to be uploaded (f is the uploader's: it discards it).
// It returns the uploader's first error, if any: nothing more is
// uploaded after one.
func (u *agencyPuts) add(f encode.File) error {
	if err := u.failed(); err != nil {
		f.Discard()
		return err
	}
	u.in <- f
	return nil
}

func (u *agencyPuts) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func (u *agencyPuts) fail(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = err
	}
}

// finish waits for every file added to be uploaded and makes them durable
// (the sink's Sync). It returns how many it uploaded, and the first error.
func (u *agencyPuts) finish() (int, error) {
	close(u.in)
	<-u.done
	u.mu.Lock()
	n, err := u.n, u.err
	u.mu.Unlock()
	if err == nil && n > 0 {
		err = u.c.bucket().Sync(u.ctx)
	}
	return n, err
}

// run gathers the files added into parts and uploads each after its
// intent. A part's intent is written while the next part gathers (at most
// three parts are held: one uploading, one waiting, one gathering).
func (u *agencyPuts) run() {
	defer close(u.done)
	parts := make(chan []encode.File, 1)
	go func() {
		for f := range u.in {
			if u.have(f.Key) {
				f.Discard()
				continue
			}
			part := []encode.File{f}
			bytes := f.Bytes
			for len(part) < partFiles && bytes < partBytes {
				f, ok := <-u.in
				if !ok {
					break
				}
				if u.have(f.Key) {
					f.Discard()
					continue
				}
				part = append(part, f)
				bytes += f.Bytes
			}
			parts <- part
		}
		close(parts)
	}()
	sem := make(chan struct{}, max(u.c.Concurrency, 1))
	var wg sync.WaitGroup
	defer wg.Wait()
	for part := range parts {
		if u.failed() != nil {
			discardAll(part)
			continue
		}
		if err := u.writeIntent(part); err != nil {
			u.fail(err)
			discardAll(part)
			continue
		}
		for _, f := range part {
			sem <- struct{}{}
			wg.Add(1)
			warm.Go(func() {
				defer func() { <-sem; wg.Done() }()
				defer f.Discard()
				if u.failed() != nil {
					return
				}
				if err := u.put(f); err != nil {
					u.fail(fmt.Errorf("publish the statements of %s: %w", u.month, err))
					return
				}
				u.mu.Lock()
				u.n++
				u.mu.Unlock()
				crashpoint.Hit(crashpoint.MonthAfterUpload)
			})
		}
	}
}

// writeIntent writes the next part of the intent: the keys of part.
func (u *agencyPuts) writeIntent(part []encode.File) error {
	in := monthIntent{RunID: u.c.RunID, Keys: make([]string, len(part))}
	for i, f := range part {
		in.Keys[i] = f.Key
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	u.mu.Lock()
	key := report.MonthIntentPartKey(u.month, u.c.RunID, len(u.intents)+1)
	u.mu.Unlock()
	if err := u.c.put(u.ctx, key, body, sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
		return fmt.Errorf("publish the statements of %s: intent: %w", u.month, err)
	}
	u.mu.Lock()
	u.intents = append(u.intents, key)
	u.mu.Unlock()
	return nil
}

// put uploads f, after a check of the fence; its durability waits for
// finish.
func (u *agencyPuts) put(f encode.File) error {
	if err := u.c.fence(); err != nil {
		return err
	}
	_, err := publish.PutEncoded(u.ctx, u.c.bucket(), f)
	return err
}

// abort deletes what a publication that failed before its manifest
// uploaded (the keys its parts name, read back: a failure is rare, and a
// month of many agencies has many keys to hold), then the parts; what it
// cannot delete is left, with the parts, to the next close's cleanup.
// Called after finish.
func (u *agencyPuts) abort(ctx context.Context) {
	if len(u.intents) == 0 {
		return
	}
	var keys []string
	var err error
	for _, k := range u.intents {
		var in monthIntent
		if in, err = u.c.readIntent(ctx, k); err != nil {
			break
		}
		keys = append(keys, in.Keys...)
	}
	if err == nil {
		err = u.c.deleteAll(ctx, keys)
	}
	if err == nil {
		err = u.c.bucket().Sync(ctx)
	}
	if err == nil {
		err = u.c.deleteAll(ctx, u.intents)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		u.c.Log.Warn("a failed publication's agency files are left to the next close's cleanup", "month", u.month,
			"intents", len(u.intents), "err", err)
	}
}

func discardAll(fs []encode.File) {
	for _, f := range fs {
		f.Discard()
	}
}

// Package collect is the first stage of building a period: it reads every
// partition of the period from a Source (one Query per partition key, never
// a scan), validates each item into a transaction or a reject, computes the
// period's fingerprint, and then, in Dedupe, drops duplicates and rejects
// conflicts within the period and against the dedupe index of earlier
// periods.
//
// Memory does not grow with the period: valid transactions are sorted by
// transaction id externally (spilled to the period's scratch folder), so
// that copies of one transaction meet in the merge, and rejects stream to
// temp files.
package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/reportjob/reportjob/internal/extsort"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// Config says how a period is collected.
type Config struct {
	// Shards is keys.shards: partitions per quarter beyond the plain one.
	Shards int
	// Concurrency bounds the partition Queries in flight (and the index
	// lookups).
	Concurrency int
	// Dir is the period's scratch folder (spill runs, reject logs). The
	// caller creates and removes it.
	Dir string
	// SortMemBytes is the in-memory budget of each external sort (0: the
	// sorter's default).
	SortMemBytes int
	// Fingerprint is the version of the items fingerprint to compute
	// (report.FingerprintFor); 0 is the latest.
	Fingerprint report.ItemsFingerprint
	// AgencyProblem, when set, is asked once per agency id: a non-empty
	// answer makes every item of that agency a reject with that reason (an
	// id whose object keys the sink cannot store).
	AgencyProblem func(agency string) string
}

// Collected is a period's items, read once: fingerprinted, validated, and
// sorted by transaction id, with the validation rejects. Close releases
// it.
type Collected struct {
	Period report.Period
	// Partitions are the partition keys read, in order.
	Partitions []string
	// ItemsRead counts every item the Queries returned.
	ItemsRead int64
	// Fingerprint is the items' order-independent fingerprint, of
	// version FingerprintVersion.
	Fingerprint        Fingerprint
	FingerprintVersion report.ItemsFingerprint

	cfg     Config
	sorted  *extsort.Sorter
	rejects []*rejectLog // per partition, in partition order
	valid   int64
	closed  bool
}

// Read queries every partition of p from src, at most cfg.Concurrency at
// once. On error nothing is kept (the scratch files are removed).
func Read(ctx context.Context, cfg Config, src Source, p report.Period) (*Collected, error) {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.Fingerprint == 0 {
		cfg.Fingerprint = report.LatestItemsFingerprint
	}
	if !cfg.Fingerprint.Valid() {
		return nil, fmt.Errorf("items fingerprint version %d: this tool computes %d to %d",
			cfg.Fingerprint, report.ItemsFingerprint1, report.LatestItemsFingerprint)
	}
	pks := report.Partitions(p, cfg.Shards)
	c := &Collected{
		Period: p, Partitions: pks, cfg: cfg, FingerprintVersion: cfg.Fingerprint,
		sorted:  extsort.New(extsort.Options{Dir: cfg.Dir, MemBytes: cfg.SortMemBytes}),
		rejects: make([]*rejectLog, len(pks)),
	}
	if err := c.read(ctx, src); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close removes what c holds on disk and in memory. It is safe to call more
// than once.
func (c *Collected) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, l := range c.rejects {
		if err := l.finish(); err != nil {
			errs = append(errs, err)
		}
		if l != nil && l.f != nil {
			os.Remove(l.f.Name())
		}
	}
	errs = append(errs, c.sorted.Close())
	return errors.Join(errs...)
}

// partResult is what one partition's reader accumulated.
type partResult struct {
	fp    Fingerprint
	items int64
	valid int64
}

func (c *Collected) read(ctx context.Context, src Source) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, c.cfg.Concurrency)
	results := make([]partResult, len(c.Partitions))
	var wg sync.WaitGroup
	for i, pk := range c.Partitions {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		c.rejects[i] = &rejectLog{dir: c.cfg.Dir}
		wg.Go(func() {
			defer func() { <-sem }()
			pr := &partReader{c: c, log: c.rejects[i], res: &results[i]}
			var err error
			if rs, ok := src.(RecordSource); ok {
				err = pipelined(ctx, func(ctx context.Context, fn func([]item.Record) error) error {
					return rs.QueryRecords(ctx, pk, "", fn)
				}, pr.records)
			} else {
				err = queryPipelined(ctx, src, pk, pr.page)
			}
			if ferr := c.rejects[i].finish(); err == nil {
				err = ferr
			}
			if err != nil {
				cancel(fmt.Errorf("query partition %s: %w", pk, err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	for _, r := range results {
		c.ItemsRead += r.items
		c.valid += r.valid
		c.Fingerprint.Merge(r.fp)
	}
	return nil
}

// pagesAhead is how many pages of a partition wait for its page
// function while the Query reads the next ones.
const pagesAhead = 1

// queryPipelined is src.Query(ctx, pk, "", fn) with fn called on a
// goroutine of its own, in page order, while the Query reads and decodes
// the next pages: the store's read (bbolt and decoding, or a DynamoDB
// round trip) and the work on each item (fingerprint, validation, the sort
// record) run on two cores. Each page is a copy of the Query's (the
// items themselves are not copied: Source lets fn keep them); at most
// pagesAhead+1 pages are held. The first error of either side stops both
// and is returned.
func queryPipelined(ctx context.Context, src Source, pk string, fn func([]item.Item) error) error {
	return pipelined(ctx, func(ctx context.Context, fn func([]item.Item) error) error {
		return src.Query(ctx, pk, "", fn)
	}, fn)
}

// pipelined is queryPipelined of any query: query(ctx, f) calls f with
// successive pages (which f must not keep) until done, f's error or ctx's
// end.
func pipelined[T any](ctx context.Context, query func(context.Context, func([]T) error) error, fn func([]T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pages := make(chan []T, pagesAhead)
	// Room for every page there can be (fn's, those queued, the one being
	// queued): a page is never dropped to be made again later.
	free := make(chan []T, pagesAhead+2)
	var fnErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pg := range pages {
			if fnErr != nil {
				continue // drain: the Query is being stopped
			}
			if fnErr = fn(pg); fnErr != nil {
				cancel(fnErr)
			}
			clear(pg) // drop the items' references
			select {
			case free <- pg[:0]:
			default:
			}
		}
	}()
	qerr := query(ctx, func(page []T) error {
		var pg []T
		select {
		case pg = <-free:
		default:
		}
		pg = append(pg, page...)
		select {
		case pages <- pg:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(pages)
	<-done
	if fnErr != nil {
		return fnErr // what stopped the Query, if it stopped
	}
	return qerr
}

// partReader turns one partition's pages into sort records and rejects.
type partReader struct {
	c        *Collected
	log      *rejectLog
	res      *partResult
	buf      []byte
	key, val []byte
	batch    extsort.Batch     // the page's sort records, added at its end
	agencyOK map[string]string // agency id -> problem ("" = fine)
}

func (pr *partReader) page(page []item.Item) error {
	for i := range page {
		it := &page[i]
		r := item.Record{PK: it.PK, SK: it.SK}
		r.Vals, r.Present = it.Contract()
		if err := pr.add(&r, it); err != nil {
			return err
		}
	}
	return pr.flush()
}

// records is page for a RecordSource.
func (pr *partReader) records(page []item.Record) error {
	for i := range page {
		if err := pr.add(&page[i], nil); err != nil {
			return err
		}
	}
	return pr.flush()
}

// flush adds the page's sort records to the sorter, which the readers of
// every partition share: one hold of its lock a page, not one a record.
func (pr *partReader) flush() error {
	if err := pr.c.sorted.AddBatch(&pr.batch); err != nil {
		return fmt.Errorf("sort by transaction id: %w", err)
	}
	return nil
}

// add fingerprints and validates the item r (it when the caller has the
// item, nil to make it from r for a reject) and adds it to the page's
// sort records (flush) or the rejects.
func (pr *partReader) add(r *item.Record, it *item.Item) error {
	pr.res.items++
	tx, err := item.ParseContract(r.PK, r.SK, &r.Vals, r.Present)
	if err == nil {
		if reason := pr.agencyProblem(tx.AgencyID); reason != "" {
			err = &item.RejectError{Field: item.AttrAgencyID, Value: tx.AgencyID, Reason: reason}
		}
	}
	var fp [32]byte
	if err == nil {
		// Hashed once, for the dedupe (the sort key) and the period's
		// fingerprint in version 2.
		fp = tx.Fingerprint()
	}
	// Version 2 hashes a transaction by what its reports show; a reject
	// (also one for its agency, whose rejects line shows the item as read)
	// is hashed as in version 1.
	if err == nil && pr.c.cfg.Fingerprint != report.ItemsFingerprint1 {
		pr.buf = pr.res.fp.addTransaction(&tx, &fp, pr.buf)
	} else {
		pr.buf = pr.res.fp.addContract(r.PK, r.SK, &r.Vals, r.Present, pr.buf)
	}
	if err != nil {
		var re *item.RejectError
		if !errors.As(err, &re) {
			return err
		}
		if it == nil {
			whole := r.Item()
			it = &whole
		}
		if err := pr.log.add(newReject(*it, re.Field, re.Value, re.Reason)); err != nil {
			return err
		}
		pr.log.sightID(it)
		return nil
	}
	// The value leaves out what the key holds (keys, id).
	pr.key, pr.val = idKey(pr.key[:0], &tx, &fp), tx.AppendBinaryBody(pr.val[:0])
	if err := pr.batch.Add(pr.key, pr.val); err != nil {
		return fmt.Errorf("sort by transaction id: %w", err)
	}
	pr.res.valid++
	return nil
}

// agencyProblem is cfg.AgencyProblem(agency), asked once per agency of
// the partition.
//
// The map's keys are copies of the agency ids, not the items' strings: a
// key that was a substring of its item kept that item's memory alive, and
// the 16-byte copies, allocated one after the other, share a few cache
// lines where the items' strings were each in a line of its own, cold by
// the time the key was compared again (the compare was most of the
// lookup's cost).
func (pr *partReader) agencyProblem(agency string) string {
	if pr.c.cfg.AgencyProblem == nil {
		return ""
	}
	if pr.agencyOK == nil {
		pr.agencyOK = make(map[string]string)
	}
	reason, ok := pr.agencyOK[agency]
	if !ok {
		reason = pr.c.cfg.AgencyProblem(agency)
		pr.agencyOK[strings.Clone(agency)] = reason
	}
	return reason
}

// idKey appends the dedupe sort key of tx, whose content fingerprint is
// fp: transaction id, 0x00, the fingerprint's first FPLen bytes, partition
// key, 0x00, sort key. Transaction ids hold no control character, so
// copies of one id sort together, by content, then by keys: the first of
// identical copies is the one with the smallest keys.
func idKey(dst []byte, tx *item.Transaction, fp *[32]byte) []byte {
	dst = append(dst, tx.ID...)
	dst = append(dst, 0)
	dst = append(dst, fp[:FPLen]...)
	dst = append(dst, tx.PK...)
	dst = append(dst, 0)
	return append(dst, tx.SK...)
}

// keyID returns the transaction id and content fingerprint of an idKey.
func keyID(key []byte) (id []byte, fp [FPLen]byte, ok bool) {
	for i, b := range key {
		if b == 0 {
			if len(key) < i+1+FPLen {
				return nil, fp, false
			}
			copy(fp[:], key[i+1:])
			return key[:i], fp, true
		}
	}
	return nil, fp, false
}

// decodeRecord decodes a sort record by transaction id (idKey, and the
// transaction's AppendBinaryBody) into tx, its strings made by arena (nil:
// an allocation of their own).
func decodeRecord(key, value []byte, tx *item.Transaction, arena *item.Strings) error {
	id, _, ok := keyID(key)
	if !ok {
		return fmt.Errorf("malformed key %q: %w", key, item.ErrCorruptRecord)
	}
	keys := key[len(id)+1+FPLen:]
	i := bytes.IndexByte(keys, 0) // partition keys hold no 0x00
	if i < 0 {
		return fmt.Errorf("malformed key %q: %w", key, item.ErrCorruptRecord)
	}
	if arena != nil {
		return tx.DecodeBinaryBodyIn(arena, keys[:i], keys[i+1:], id, value)
	}
	return tx.DecodeBinaryBody(keys[:i], keys[i+1:], id, value)
}

// rejectsPath is where Dedupe joins the rejects file.
func (c *Collected) rejectsPath() string { return filepath.Join(c.cfg.Dir, "rejects.jsonl") }

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
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// Fingerprint is the items' order-independent fingerprint.
	Fingerprint Fingerprint

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
	pks := report.Partitions(p, cfg.Shards)
	c := &Collected{
		Period: p, Partitions: pks, cfg: cfg,
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
			err := src.Query(ctx, pk, "", pr.page)
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

// partReader turns one partition's pages into sort records and rejects.
type partReader struct {
	c        *Collected
	log      *rejectLog
	res      *partResult
	buf      []byte
	key, val []byte
	agencyOK map[string]string // agency id -> problem ("" = fine)
}

func (pr *partReader) page(page []item.Item) error {
	for i := range page {
		it := &page[i]
		pr.res.items++
		vals, present := it.Contract()
		pr.buf = pr.res.fp.addContract(it.PK, it.SK, &vals, present, pr.buf)
		tx, err := item.ParseContract(it.PK, it.SK, &vals, present)
		if err != nil {
			var re *item.RejectError
			if !errors.As(err, &re) {
				return err
			}
			if err := pr.log.add(newReject(*it, re.Field, re.Value, re.Reason)); err != nil {
				return err
			}
			pr.log.sightID(it)
			continue
		}
		if reason := pr.agencyProblem(tx.AgencyID); reason != "" {
			if err := pr.log.add(newReject(*it, item.AttrAgencyID, tx.AgencyID, reason)); err != nil {
				return err
			}
			pr.log.sightID(it)
			continue
		}
		pr.key, pr.val = idKey(pr.key[:0], &tx), tx.AppendBinary(pr.val[:0])
		if err := pr.c.sorted.Add(pr.key, pr.val); err != nil {
			return fmt.Errorf("sort by transaction id: %w", err)
		}
		pr.res.valid++
	}
	return nil
}

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
		pr.agencyOK[agency] = reason
	}
	return reason
}

// idKey appends the dedupe sort key of tx: transaction id, 0x00, content
// fingerprint (FPLen bytes), partition key, 0x00, sort key. Transaction
// ids hold no control character, so copies of one id sort together, by
// content, then by keys: the first of identical copies is the one with the
// smallest keys.
func idKey(dst []byte, tx *item.Transaction) []byte {
	fp := tx.Fingerprint()
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

// rejectsPath is where Dedupe joins the rejects file.
func (c *Collected) rejectsPath() string { return filepath.Join(c.cfg.Dir, "rejects.jsonl") }

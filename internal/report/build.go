package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
)

// Config says how a period's reports are built.
type Config struct {
	Job       string
	Shards    int  // keys.shards: partitions per quarter
	LineItems bool // write transactions.parquet
	CSV       bool // write summary.csv
	// Concurrency bounds partition queries and uploads in flight.
	Concurrency int
	DefaultBPS  int32
	AgencyBPS   map[string]int32
	// TempDir holds spill files and line-item files before upload ("" =
	// the OS default).
	TempDir string
	// RunSize is how many transactions are held in memory before a sorted
	// run is spilled to TempDir (default 200,000).
	RunSize int
	Version string
	SinkURL string
	// Now stamps manifest.generated_at (default time.Now).
	Now func() time.Time
	// OnSummary, when set, is called with every summary row written (the
	// demo prints them). It is called from one goroutine.
	OnSummary func(SummaryRow)
}

// Builder builds the reports of a period: it reads every partition of the
// period from a Source and delivers the files to a Sink.
type Builder struct {
	cfg  Config
	src  Source
	sink Sink
	log  *slog.Logger
}

// NewBuilder returns a Builder.
func NewBuilder(cfg Config, src Source, sink Sink, log *slog.Logger) *Builder {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.RunSize < 1 {
		cfg.RunSize = 200_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Builder{cfg: cfg, src: src, sink: sink, log: log}
}

// Partitions returns the partition keys of p, in order: for each quarter,
// the plain key, then with keys.shards N > 1 the N sharded keys. The plain
// key is read even when sharded, so that items of producers that do not
// shard (or written before sharding was turned on) are never missed.
func Partitions(p Period, shards int) []string {
	var pks []string
	for _, q := range p.Quarters() {
		pks = append(pks, keys.Quarter(q))
		if shards > 1 {
			for k := 0; k < shards; k++ {
				pks = append(pks, keys.Partition(q, k, shards))
			}
		}
	}
	return pks
}

// seenTx is what the dedupe set keeps per transaction id: the set is the
// one part of a period held in memory whole, so it is kept small (values
// inline, half the SHA-256 fingerprint: two items with one transaction id
// and different content collide with probability 2^-128).
type seenTx struct {
	fp       [16]byte
	n        int32
	conflict bool
	emitted  bool
}

// periodState is what a Build accumulates while reading.
type periodState struct {
	mu     sync.Mutex
	seen   map[string]seenTx
	sorted *sorter
	// rejects: one log per partition (validation rejects, in the
	// partition's sort key order), then the conflicting duplicates.
	rejects   []*rejectLog
	conflicts *rejectLog
	itemsRead int64
}

// Build reads period p and delivers its reports, manifest.json last, and
// returns the manifest. On any error nothing more is written and no
// manifest is; objects already written are overwritten by the next Build
// of p with the same bytes.
func (b *Builder) Build(ctx context.Context, p Period) (*Manifest, error) {
	tmp, err := os.MkdirTemp(b.cfg.TempDir, "reportjob-*")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	pks := Partitions(p, b.cfg.Shards)
	st := &periodState{seen: make(map[string]seenTx), sorted: newSorter(tmp, b.cfg.RunSize),
		rejects: make([]*rejectLog, len(pks)), conflicts: &rejectLog{dir: tmp}}
	defer st.sorted.close()
	if err := b.read(ctx, st, pks); err != nil {
		return nil, err
	}

	m := &Manifest{
		Job: b.cfg.Job, PeriodStart: p.Start.UTC(), PeriodEnd: p.End.UTC(), ToolVersion: b.cfg.Version,
		Sink: b.cfg.SinkURL, Partitions: pks, ItemsRead: st.itemsRead,
	}
	up := newUploader(ctx, b.sink, b.cfg.Concurrency)
	tot := totals{}
	if err := b.write(ctx, p, st, tmp, up, tot, m); err != nil {
		up.wait()
		return nil, err
	}
	if err := st.conflicts.finish(); err != nil {
		up.wait()
		return nil, err
	}
	rejects, hw, err := joinRejects(filepath.Join(tmp, "rejects.jsonl"), append(st.rejects, st.conflicts))
	if err != nil {
		up.wait()
		return nil, err
	}
	if rejects > 0 {
		up.putFile(hw.info(periodKey(p, "rejects.jsonl"), rejects), "application/x-ndjson", filepath.Join(tmp, "rejects.jsonl"))
	}
	files, err := up.wait()
	if err != nil {
		return nil, err
	}
	m.Rejects = rejects
	m.Totals = tot.list()
	m.Files = append([]FileInfo{}, files...) // [] rather than null for an empty period
	m.GeneratedAt = b.cfg.Now().UTC()

	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	body = append(body, '\n')
	if err := putObject(ctx, b.sink, periodKey(p, "manifest.json"), "application/json", bytes.NewReader(body)); err != nil {
		return nil, err
	}
	return m, nil
}

// read queries every partition, at most Concurrency at once, validating
// each item into the dedupe set and the sorter, or the rejects.
func (b *Builder) read(ctx context.Context, st *periodState, pks []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, b.cfg.Concurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for i, pk := range pks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rl := &rejectLog{dir: st.sorted.dir}
			st.rejects[i] = rl
			err := b.src.Query(ctx, pk, "", func(page []item.Item) error { return st.addPage(page, rl) })
			if err == nil {
				err = rl.finish()
			} else {
				rl.finish()
			}
			if err != nil {
				once.Do(func() { firstErr = fmt.Errorf("query partition %s: %w", pk, err); cancel() })
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// addPage validates a page of partition items; rl is the partition's
// reject log, written only by the partition's goroutine.
func (st *periodState) addPage(page []item.Item, rl *rejectLog) error {
	txs := make([]item.Transaction, 0, len(page))
	for _, it := range page {
		tx, err := item.Parse(it)
		if err != nil {
			var re *item.RejectError
			if !errors.As(err, &re) {
				return err
			}
			if err := rl.add(newReject(it, re.Field, re.Value, re.Reason)); err != nil {
				return err
			}
			continue
		}
		txs = append(txs, tx)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.itemsRead += int64(len(page))
	for _, tx := range txs {
		full := tx.Fingerprint()
		fp := [16]byte(full[:16])
		if s, ok := st.seen[tx.ID]; ok {
			s.n++
			s.conflict = s.conflict || s.fp != fp
			st.seen[tx.ID] = s
		} else {
			st.seen[tx.ID] = seenTx{fp: fp, n: 1}
		}
		if err := st.sorted.add(tx); err != nil {
			return err
		}
	}
	return nil
}

// write merges the sorted transactions agency by agency into their files.
func (b *Builder) write(ctx context.Context, p Period, st *periodState, tmp string, up *uploader, tot totals, m *Manifest) error {
	var ag *agencyFiles
	flush := func() error {
		if ag == nil {
			return nil
		}
		rows, err := ag.finish(up)
		ag = nil
		if err != nil {
			return err
		}
		for _, r := range rows {
			if b.cfg.OnSummary != nil {
				b.cfg.OnSummary(r)
			}
			if err := tot.add(r); err != nil {
				return fmt.Errorf("period totals %s: %w", r.Currency.Code, err)
			}
		}
		return nil
	}
	err := st.sorted.each(func(tx *item.Transaction) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := up.failed(); err != nil {
			return err // stop encoding: the period cannot be delivered
		}
		s := st.seen[tx.ID]
		switch {
		case s.conflict:
			return st.conflicts.add(newReject(tx.Item(), item.AttrTransactionID, tx.ID,
				fmt.Sprintf("conflicting duplicate: %d items carry this transaction_id with different content", s.n)))
		case s.emitted:
			m.DuplicatesDropped++
			return nil
		}
		s.emitted = true
		st.seen[tx.ID] = s
		if ag != nil && ag.agency != tx.AgencyID {
			if err := flush(); err != nil {
				return err
			}
		}
		if ag == nil {
			var err error
			if ag, err = b.newAgencyFiles(p, tx.AgencyID, tmp); err != nil {
				return err
			}
		}
		m.Transactions++
		return ag.add(tx, b.rate(tx))
	})
	if err == nil {
		err = flush()
	}
	if err != nil && ag != nil {
		ag.discard()
	}
	return err
}

// rate is the commission rate of tx: its own, its agency's, or the default.
func (b *Builder) rate(tx *item.Transaction) int32 {
	if tx.HasBPS {
		return tx.BPS
	}
	if bps, ok := b.cfg.AgencyBPS[tx.AgencyID]; ok {
		return bps
	}
	return b.cfg.DefaultBPS
}

// lineCommission is a transaction's signed commission in minor units.
func lineCommission(tx *item.Transaction, bps int32) int64 {
	c := money.Commission(tx.Amount, int64(bps))
	if tx.Kind == item.Refund {
		return -c
	}
	return c
}

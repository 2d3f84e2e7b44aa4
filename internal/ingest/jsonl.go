// Package ingest writes billing transactions into the data table: from a
// JSON Lines stream (ReadJSONL) or from the synthetic generator (Generate),
// through a Writer.
//
// Every record becomes the canonical item of its transaction: keys derived
// from its transaction id and recorded_at (keys.ForTransaction), validated
// by item.Parse, the same rules the report applies, so ingest never writes
// an item the report would reject.
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"time"

	"github.com/reportjob/reportjob/internal/item"
)

// MaxLineBytes is the longest JSON Lines line ReadJSONL accepts, without
// its line terminator. A longer line is a LineError wrapping
// ErrLineTooLong; reading goes on with the next line.
const MaxLineBytes = 1 << 20

// DefaultBatchSize is the number of items per Writer.PutItems call when
// Options.BatchSize is 0.
const DefaultBatchSize = 500

// MaxFutureSkew is how far past the ingest's clock a recorded_at may be.
// Further is refused, AllowLate or not: it is a producer clock or time-zone
// error (local time labelled UTC, seconds read as milliseconds), and the
// item would be billed in a period that has not happened yet.
const MaxFutureSkew = 5 * time.Minute

// Log attribute keys.
const (
	logLine       = "line"
	logRead       = "read"
	logWritten    = "written"
	logInvalid    = "invalid"
	logDuplicates = "duplicates"
	logBatch      = "batch_items"
	logTxID       = "transaction_id"
)

// Options configure ReadJSONL.
type Options struct {
	// Shards is keys.shards: the number of write shards per quarter.
	Shards int
	// Lateness is report.lateness. A record recorded before Now()-Lateness
	// could land in a period already reported: it is refused unless
	// AllowLate.
	Lateness time.Duration
	// AllowLate writes late records anyway (the operator then reruns the
	// affected periods with run --backfill).
	AllowLate bool
	// Now is the ingest's clock (default time.Now). A record without
	// recorded_at is recorded at Now(), read once per ReadJSONL call.
	Now func() time.Time
	// BatchSize is the number of items per Writer.PutItems call (default
	// DefaultBatchSize).
	BatchSize int
	// Logger gets debug progress and warnings (default: discard).
	Logger *slog.Logger
	// Stop, when closed, ends ReadJSONL before the next line: the lines
	// read are written (the batch in flight finished), no other, and it
	// returns ErrStopped; Stats.Lines says where the rest starts.
	Stop <-chan struct{}
}

// Stats count what an ingest did. Read = Written + Invalid + Duplicates
// when nothing failed.
type Stats struct {
	// Read is the number of records read (non-blank lines, or generated).
	Read int
	// Written is the number of items the Writer stored.
	Written int
	// Invalid is the number of records refused (bad lines).
	Invalid int
	// Duplicates is the number of records whose keys (same transaction id,
	// same recorded_at second) repeated an earlier record's in the same
	// batch: the later record is written, once. A repeat that falls in a
	// later batch is written again; PutItems replaces the item, so the
	// table still holds it once, and it counts as Written.
	Duplicates int
	// Lines is the number of input lines ReadJSONL went through (blank
	// and bad ones included): the rest of the input starts at line
	// Lines+1.
	Lines int
}

// LineError is one bad input line: the line number (1-based, counting
// every line) and why it was refused: a *item.RejectError naming the field
// and its value, or an error wrapping ErrBadJSON or ErrLineTooLong.
type LineError struct {
	Line int
	Err  error
}

// ErrLate is matched (errors.Is) by the error of a record refused for
// being older than report.lateness.
var ErrLate = errors.New("record older than report.lateness")

// lateError is the reject of a late record: a *item.RejectError that also
// matches ErrLate.
type lateError struct{ *item.RejectError }

func (e lateError) Is(target error) bool { return target == ErrLate }
func (e lateError) Unwrap() error        { return e.RejectError }

// Error returns e.g. `line 12: amount "19.999": more fraction digits than USD has (2)`.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }

// ReadJSONL streams JSON Lines from r, one transaction per line, and writes
// every valid record through w in batches of opts.BatchSize. It returns
// the stats and every bad line; bad lines are not written, valid ones are.
// The error is non-nil only when reading r fails, ctx ends, opts.Stop is
// closed (ErrStopped) or w fails (a
// *WriteError from w is wrapped, so errors.As finds it); the stats then
// count what was written before.
//
// A line is one JSON object with the fields transaction_id, agency_id,
// amount, currency, kind, commission_bps, customer_id, product_id and
// recorded_at. amount and commission_bps may be JSON numbers or strings
// holding the number; either way the literal text is used, never a float.
// An unknown field is an error naming it (a typo must not drop a value).
// Blank lines are skipped.
//
// A record without recorded_at is recorded at opts.Now(). Producers should
// set recorded_at: with it, re-ingesting the same file writes the same
// items (the keys derive from transaction_id and recorded_at); without it,
// a retry at another time writes the transaction again under other keys,
// and the report rejects the pair as a conflict or counts it once.
//
// A record recorded before now-opts.Lateness is refused unless
// opts.AllowLate; one more than MaxFutureSkew in the future is refused.
func ReadJSONL(ctx context.Context, r io.Reader, w Writer, opts Options) (Stats, []LineError, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clock := now().UTC()
	oldest := clock.Add(-opts.Lateness)
	newest := clock.Add(MaxFutureSkew)

	var (
		stats   Stats
		badLine []LineError
	)
	b := newBatcher(w, opts.BatchSize, &stats, log)
	lr := newLineReader(r)
	// stop ends an early return: the batch in flight is counted (its own
	// error, if any, comes second to err).
	stop := func(err error) (Stats, []LineError, error) {
		b.wait()
		stats.Lines = lr.n
		return stats, badLine, err
	}
	for {
		select {
		case <-opts.Stop:
			if err := b.finish(ctx, lr.n); err != nil {
				return stop(err)
			}
			return stop(ErrStopped)
		default:
		}
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return stop(fmt.Errorf("read line %d: %w", lr.n+1, err))
		}
		if lr.n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return stop(fmt.Errorf("ingest stopped at line %d: %w", lr.n, err))
			}
		}
		if !lr.tooLong && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		stats.Read++
		it, err := lineItem(line, lr.tooLong, clock, oldest, newest, opts)
		if err != nil {
			stats.Invalid++
			badLine = append(badLine, LineError{Line: lr.n, Err: err})
			log.Debug("line refused", logLine, lr.n, "error", err)
			continue
		}
		if err := b.add(ctx, it, lr.n); err != nil {
			return stop(err)
		}
	}
	if err := b.finish(ctx, lr.n); err != nil {
		return stop(err)
	}
	stats.Lines = lr.n
	log.Debug("ingest done", logRead, stats.Read, logWritten, stats.Written,
		logInvalid, stats.Invalid, logDuplicates, stats.Duplicates)
	return stats, badLine, nil
}

// lineItem turns one line into the item to write, or the reason it is
// refused.
func lineItem(line []byte, tooLong bool, clock, oldest, newest time.Time, opts Options) (item.Item, error) {
	if tooLong {
		return item.Item{}, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, MaxLineBytes)
	}
	attrs, err := decodeLine(line)
	if err != nil {
		return item.Item{}, err
	}
	at, ok, err := recordedAt(attrs)
	if err != nil {
		return item.Item{}, err
	}
	if !ok {
		at = clock
	}
	tx, err := transaction(attrs, at, opts.Shards)
	if err != nil {
		return item.Item{}, err
	}
	raw := attrs[item.AttrRecordedAt].Text
	switch {
	case tx.RecordedAt.After(newest):
		return item.Item{}, &item.RejectError{Field: item.AttrRecordedAt, Value: raw,
			Reason: fmt.Sprintf("more than %v after the ingest clock %s: a producer clock or time-zone error?",
				MaxFutureSkew, clock.Format(time.RFC3339))}
	case !opts.AllowLate && tx.RecordedAt.Before(oldest):
		return item.Item{}, lateError{&item.RejectError{Field: item.AttrRecordedAt, Value: raw,
			Reason: fmt.Sprintf("older than lateness %v before %s: it could land in a period already reported "+
				"(ingest with --allow-late, then rerun the period with run --backfill)", opts.Lateness, clock.Format(time.RFC3339))}}
	}
	return tx.Item(), nil
}

// lineReader reads lines of at most MaxLineBytes, skipping the rest of a
// longer one, so a huge line costs bounded memory.
type lineReader struct {
	br      *bufio.Reader
	buf     []byte
	n       int  // number of the line last returned
	tooLong bool // the line last returned was longer than MaxLineBytes (and is empty)
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// utf8BOM is skipped at the start of the first line.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// next returns the next line without "\n" or "\r\n", valid until the next
// call, or io.EOF after the last line.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	lr.tooLong = false
	started := false
	for {
		frag, err := lr.br.ReadSlice('\n')
		if len(frag) > 0 {
			started = true
		}
		if !lr.tooLong {
			if len(lr.buf)+len(frag) > MaxLineBytes+2 { // content plus "\r\n"
				lr.tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			if !started {
				return nil, io.EOF
			}
			break
		}
		if err != nil {
			return nil, err
		}
		break
	}
	lr.n++
	line := bytes.TrimSuffix(lr.buf, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if lr.n == 1 {
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	if len(line) > MaxLineBytes {
		lr.tooLong = true
		line = nil
	}
	return line, nil
}

// batcher gathers items into batches with distinct keys and writes each
// full batch. A batch is written by a goroutine of its own while the next
// one fills (reading and validating overlap the store's writes); at most
// one is in flight, so batches reach the Writer one after the other, in
// order. Call wait before looking at the stats or returning.
type batcher struct {
	w     Writer
	size  int
	items []item.Item
	index map[[2]string]int // (PK, SK) -> position in items
	stats *Stats
	log   *slog.Logger

	// The batch in flight: its outcome, size and input position.
	writing      chan error
	writingN     int
	writingWhere int
}

func newBatcher(w Writer, size int, stats *Stats, log *slog.Logger) *batcher {
	if size <= 0 {
		size = DefaultBatchSize
		if bs, ok := w.(BatchSizer); ok && bs.PreferredBatch() > 0 {
			size = bs.PreferredBatch()
		}
	}
	return &batcher{w: w, size: size, index: make(map[[2]string]int, size), stats: stats, log: log,
		items: make([]item.Item, 0, size)}
}

// add queues it; an item with the keys of one already queued replaces it
// (the later record wins) and counts a duplicate. where is the input
// position for messages.
func (b *batcher) add(ctx context.Context, it item.Item, where int) error {
	k := [2]string{it.PK, it.SK}
	if i, ok := b.index[k]; ok {
		if !maps.Equal(b.items[i].Attrs, it.Attrs) {
			b.log.Warn("same keys, different content: the later record wins",
				logLine, where, logTxID, it.Attrs[item.AttrTransactionID].Text)
		}
		b.items[i] = it
		b.stats.Duplicates++
		return nil
	}
	b.index[k] = len(b.items)
	b.items = append(b.items, it)
	if len(b.items) >= b.size {
		return b.flush(ctx, where)
	}
	return nil
}

// flush starts writing the queued items, if any, once the batch in
// flight is written.
func (b *batcher) flush(ctx context.Context, where int) error {
	if err := b.wait(); err != nil {
		return err
	}
	if len(b.items) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ingest stopped before writing %d items (up to input %d): %w", len(b.items), where, err)
	}
	items := b.items
	// A new slice: the Writer may still hold the one it was given.
	b.items = make([]item.Item, 0, b.size)
	clear(b.index)
	done := make(chan error, 1)
	b.writing, b.writingN, b.writingWhere = done, len(items), where
	go func() { done <- b.w.PutItems(ctx, items) }()
	return nil
}

// wait waits for the batch in flight, if any, and counts what it wrote.
func (b *batcher) wait() error {
	if b.writing == nil {
		return nil
	}
	err := <-b.writing
	b.writing = nil
	if err != nil {
		var we *WriteError
		if errors.As(err, &we) && len(we.TransactionIDs) <= b.writingN {
			b.stats.Written += b.writingN - len(we.TransactionIDs)
		}
		return fmt.Errorf("write %d items (up to input %d): %w", b.writingN, b.writingWhere, err)
	}
	b.stats.Written += b.writingN
	b.log.Debug("batch written", logBatch, b.writingN, logWritten, b.stats.Written)
	return nil
}

// finish writes what is queued and waits for it.
func (b *batcher) finish(ctx context.Context, where int) error {
	if err := b.flush(ctx, where); err != nil {
		return err
	}
	return b.wait()
}

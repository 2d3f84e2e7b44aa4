package report

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
)

// agencyFiles builds one agency's files for a period from its transactions,
// which arrive sorted by (currency, sort key): summary rows accumulate per
// currency, and line items stream into a temp file.
type agencyFiles struct {
	b      *Builder
	p      Period
	agency string
	rows   []SummaryRow

	linePath string
	lineFile *os.File
	lineBuf  *bufio.Writer
	lineHash *hashWriter
	lines    *LineItemWriter
}

func (b *Builder) newAgencyFiles(p Period, agency, tmp string) (*agencyFiles, error) {
	a := &agencyFiles{b: b, p: p, agency: agency}
	if b.cfg.LineItems {
		f, err := os.CreateTemp(tmp, "lines-*.parquet")
		if err != nil {
			return nil, fmt.Errorf("line items of agency %q: %w", agency, err)
		}
		a.linePath, a.lineFile = f.Name(), f
		a.lineBuf = bufio.NewWriterSize(f, 1<<20)
		a.lineHash = newHashWriter(a.lineBuf)
		a.lines = NewLineItemWriter(a.lineHash)
	}
	return a, nil
}

func (a *agencyFiles) add(tx *item.Transaction, bps int32) error {
	c := lineCommission(tx, bps)
	if n := len(a.rows); n == 0 || a.rows[n-1].Currency.Code != tx.Currency.Code {
		a.rows = append(a.rows, SummaryRow{
			PeriodStart: a.p.Start.UTC(), PeriodEnd: a.p.End.UTC(), AgencyID: a.agency, Currency: tx.Currency,
		})
	}
	r := &a.rows[len(a.rows)-1]
	var err error
	if tx.Kind == item.Refund {
		r.RefundCount++
		r.Refunds, err = money.Add(r.Refunds, tx.Amount)
	} else {
		r.PurchaseCount++
		r.Gross, err = money.Add(r.Gross, tx.Amount)
	}
	if err == nil {
		r.Commission, err = money.Add(r.Commission, c)
	}
	if err != nil {
		return fmt.Errorf("agency %q %s: sum: %w", a.agency, tx.Currency.Code, err)
	}
	if a.lines != nil {
		if err := a.lines.Write(LineItem{Tx: *tx, BPS: bps, Commission: c}); err != nil {
			return fmt.Errorf("line items of agency %q: %w", a.agency, err)
		}
	}
	return nil
}

// finish encodes the agency's files and hands them to the uploader.
func (a *agencyFiles) finish(up *uploader) ([]SummaryRow, error) {
	for i := range a.rows {
		net, err := money.Add(a.rows[i].Gross, -a.rows[i].Refunds)
		if err != nil {
			a.discard()
			return nil, fmt.Errorf("agency %q %s: net: %w", a.agency, a.rows[i].Currency.Code, err)
		}
		a.rows[i].Net = net
	}
	if a.lines != nil {
		err := a.lines.Close()
		if err == nil {
			err = a.lineBuf.Flush()
		}
		if cerr := a.lineFile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(a.linePath)
			return nil, fmt.Errorf("line items of agency %q: %w", a.agency, err)
		}
		key := agencyKey(a.p, a.agency, "transactions.parquet")
		up.putFile(a.lineHash.info(key, a.lines.Rows()), "application/vnd.apache.parquet", a.linePath)
	}
	if err := a.encode(up, "summary.parquet", "application/vnd.apache.parquet", WriteSummaryParquet); err != nil {
		return nil, err
	}
	if a.b.cfg.CSV {
		if err := a.encode(up, "summary.csv", "text/csv; charset=utf-8", WriteSummaryCSV); err != nil {
			return nil, err
		}
	}
	return a.rows, nil
}

func (a *agencyFiles) encode(up *uploader, name, contentType string, enc func(io.Writer, []SummaryRow) error) error {
	var buf bytes.Buffer
	hw := newHashWriter(&buf)
	if err := enc(hw, a.rows); err != nil {
		return fmt.Errorf("%s of agency %q: %w", name, a.agency, err)
	}
	up.putBytes(hw.info(agencyKey(a.p, a.agency, name), int64(len(a.rows))), contentType, buf.Bytes())
	return nil
}

// discard drops a half-built agency after an error.
func (a *agencyFiles) discard() {
	if a.lineFile != nil {
		a.lineFile.Close()
		os.Remove(a.linePath)
	}
}

// uploader puts objects into the sink, at most n at once, and records what
// it wrote. After the first error it puts nothing more.
type uploader struct {
	ctx    context.Context
	cancel context.CancelFunc
	sink   Sink
	sem    chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	err   error
	files []FileInfo
}

func newUploader(ctx context.Context, sink Sink, n int) *uploader {
	ctx, cancel := context.WithCancel(ctx)
	return &uploader{ctx: ctx, cancel: cancel, sink: sink, sem: make(chan struct{}, n)}
}

func (u *uploader) putBytes(info FileInfo, contentType string, body []byte) {
	u.start(info, contentType, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }, nil)
}

// putFile uploads the file at path, then removes it.
func (u *uploader) putFile(info FileInfo, contentType, path string) {
	u.start(info, contentType, func() (io.ReadCloser, error) { return os.Open(path) }, func() { os.Remove(path) })
}

func (u *uploader) start(info FileInfo, contentType string, open func() (io.ReadCloser, error), done func()) {
	select {
	case u.sem <- struct{}{}:
	case <-u.ctx.Done():
		u.fail(u.ctx.Err())
		if done != nil {
			done()
		}
		return
	}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer func() { <-u.sem }()
		if done != nil {
			defer done()
		}
		r, err := open()
		if err == nil {
			err = putObject(u.ctx, u.sink, info.Key, contentType, r)
			r.Close()
		}
		if err != nil {
			u.fail(err)
			return
		}
		u.mu.Lock()
		u.files = append(u.files, info)
		u.mu.Unlock()
	}()
}

// failed returns the first upload error, if any.
func (u *uploader) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func (u *uploader) fail(err error) {
	u.mu.Lock()
	if u.err == nil {
		u.err = err
	}
	u.mu.Unlock()
	u.cancel()
}

// wait waits for every upload and returns what was written, by key.
func (u *uploader) wait() ([]FileInfo, error) {
	u.wg.Wait()
	u.cancel()
	u.mu.Lock()
	defer u.mu.Unlock()
	sort.Slice(u.files, func(i, j int) bool { return u.files[i].Key < u.files[j].Key })
	return u.files, u.err
}

// putObject writes r to key: whole, or not at all.
func putObject(ctx context.Context, sink Sink, key, contentType string, r io.Reader) error {
	w, err := sink.NewWriter(ctx, key, contentType)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Abort()
		return fmt.Errorf("write %s: %w", key, err)
	}
	if err := w.Commit(); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// Discard is a Sink that stores nothing: a dry run builds every file into
// it, so the manifest lists what a real run would write, with sizes and
// checksums, and nothing is written.
type Discard struct{}

var _ Sink = Discard{}

func (Discard) NewWriter(ctx context.Context, key, contentType string) (ObjectWriter, error) {
	return discardWriter{}, nil
}

func (Discard) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
}

func (Discard) List(ctx context.Context, prefix string) ([]ObjectInfo, error) { return nil, nil }

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) Commit() error               { return nil }
func (discardWriter) Abort() error                { return nil }

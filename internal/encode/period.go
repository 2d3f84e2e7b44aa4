package encode

import (
	"fmt"
	"io"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/warm"
)

// Formats are the per-agency file formats (report.agency_files).
type Formats struct{ CSV, Parquet bool }

// Writer encodes one period's files and hands each finished one to out
// (which uploads it): the summary first, then the adjustments of a
// restatement, then the line items agency by agency, then the rejects and
// the duplicates.
// Every agency with rows gets its files in its own folder in the Formats
// asked. On error, or when Close is called early, what is not handed out
// is removed; files handed out belong to out. A Writer is not safe for
// concurrent use. Agency files are encoded or finished by goroutines of
// their own, a few at a time, while the caller goes on; out is called
// from the caller's goroutine, in the order above, whatever order they
// finish in.
type Writer struct {
	dir     string
	p       report.Period
	formats Formats
	layout  report.ParquetLayout
	out     func(File) error
	err     error

	lines     *LineItemWriter
	linesFile *tempFile
	agency    *agencyLines
	// closing are the agencies whose line-item files are being finished
	// by goroutines of their own, in line order: handed out in that order.
	closing []chan closed
}

// closed is an agency's finished line-item files, or why they are not.
type closed struct {
	files []File
	err   error
}

// agencyLines are one agency's line-item files being written.
type agencyLines struct {
	id       string
	csvFile  *tempFile
	csv      *LineItemCSVWriter
	parqFile *tempFile
	parq     *LineItemWriter
}

// discardParquet stops the agency's Parquet writer, whose goroutine may
// still be writing a batch to its file, then removes the file.
func (a *agencyLines) discardParquet() {
	if a.parq != nil {
		a.parq.abort()
	}
	a.parqFile.discard()
}

// NewWriter returns a Writer of period p's files, in Parquet layout l
// (report.LayoutFor), into temp files in dir.
func NewWriter(dir string, p report.Period, formats Formats, l report.ParquetLayout, out func(File) error) *Writer {
	return &Writer{dir: dir, p: p, formats: formats, layout: l, out: out}
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

func (w *Writer) emit(f File, err error) error {
	if err != nil {
		return w.fail(err)
	}
	if err := w.out(f); err != nil {
		return w.fail(err)
	}
	return nil
}

// Summary writes the summary dataset file (every agency, possibly none)
// and each agency's summary files. rows are sorted by (agency, currency).
func (w *Writer) Summary(rows []report.SummaryRow) error {
	if w.err != nil {
		return w.err
	}
	prefix := report.DatasetPrefix(report.DatasetSummary, w.p)
	if err := w.emit(encodeFile(w.dir, SmallFileBytes, prefix, "summary", "parquet", TypeParquet, int64(len(rows)),
		func(x io.Writer) error { return WriteSummaryParquet(x, rows) })); err != nil {
		return err
	}
	return w.agencyFiles(len(rows), func(i int) string { return rows[i].AgencyID }, "summary",
		func(x io.Writer, lo, hi int) error { return WriteSummaryCSV(x, rows[lo:hi]) },
		func(x io.Writer, lo, hi int) error { return WriteSummaryParquet(x, rows[lo:hi]) })
}

// Adjustments writes the adjustments dataset file and each changed
// agency's adjustments files; nothing when rows is empty.
func (w *Writer) Adjustments(rows []report.AdjustmentRow) error {
	if w.err != nil || len(rows) == 0 {
		return w.err
	}
	prefix := report.DatasetPrefix(report.DatasetAdjustments, w.p)
	if err := w.emit(encodeFile(w.dir, SmallFileBytes, prefix, "adjustments", "parquet", TypeParquet, int64(len(rows)),
		func(x io.Writer) error { return WriteAdjustmentsParquet(x, rows) })); err != nil {
		return err
	}
	return w.agencyFiles(len(rows), func(i int) string { return rows[i].AgencyID }, "adjustments",
		func(x io.Writer, lo, hi int) error { return WriteAdjustmentsCSV(x, rows[lo:hi]) },
		func(x io.Writer, lo, hi int) error { return WriteAdjustmentsParquet(x, rows[lo:hi]) })
}

// agencyFiles writes, for each run of rows [lo, hi) of one agency (rows
// are sorted by agency), that agency's base.csv and base.parquet files in
// the Formats asked. The files are encoded concurrently (warm.Go), up to
// encoders ahead of the one handed out next, and handed out in that
// order.
func (w *Writer) agencyFiles(n int, agency func(i int) string, base string, csv, parq func(x io.Writer, lo, hi int) error) error {
	type result struct {
		f   File
		err error
	}
	pending := make(chan chan result, encoders)
	stop := make(chan struct{})
	go func() {
		defer close(pending)
		for lo := 0; lo < n; {
			hi := lo + 1
			for hi < n && agency(hi) == agency(lo) {
				hi++
			}
			ap := report.AgencyPrefix(agency(lo), w.p)
			for _, f := range []struct {
				on       bool
				ext, typ string
				enc      func(x io.Writer, lo, hi int) error
			}{{w.formats.CSV, "csv", TypeCSV, csv}, {w.formats.Parquet, "parquet", TypeParquet, parq}} {
				if !f.on {
					continue
				}
				c := make(chan result, 1)
				select {
				case pending <- c:
				case <-stop:
					return
				}
				lo, hi := lo, hi
				warm.Go(func() {
					file, err := encodeFile(w.dir, SmallFileBytes, ap, base, f.ext, f.typ, int64(hi-lo),
						func(x io.Writer) error { return f.enc(x, lo, hi) })
					c <- result{file, err}
				})
			}
			lo = hi
		}
	}()
	var first error
	for c := range pending {
		r := <-c
		if first != nil {
			if r.err == nil {
				r.f.Discard()
			}
			continue
		}
		if first = w.emit(r.f, r.err); first != nil {
			close(stop)
		}
	}
	return first
}

// encoders is how many agency files agencyFiles encodes ahead of the one
// it hands out next (so encoders+1 at most at once): enough to keep the
// CPUs busy while the uploads wait on the disk or network.
const encoders = 4

// Line adds one line item, in file order (agency, currency, sort key):
// to the transactions dataset file and to its agency's transactions files.
func (w *Writer) Line(li *report.LineItem) error {
	if w.err != nil {
		return w.err
	}
	if w.lines == nil {
		if err := w.openLines(); err != nil {
			return err
		}
	}
	if err := w.lines.Write(li); err != nil {
		return w.fail(err)
	}
	if !w.formats.CSV && !w.formats.Parquet {
		return nil
	}
	if w.agency != nil && w.agency.id != li.Tx.AgencyID {
		if err := w.endAgency(); err != nil {
			return err
		}
	}
	if w.agency == nil {
		if err := w.startAgency(li.Tx.AgencyID); err != nil {
			return err
		}
	}
	a := w.agency
	if a.csv != nil {
		if err := a.csv.Write(li); err != nil {
			return w.fail(err)
		}
	}
	if a.parq != nil {
		if err := a.parq.Write(li); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// EndLines finishes the transactions dataset file (an empty one when there
// was no line item) and the last agency's files.
func (w *Writer) EndLines() error {
	if w.err != nil {
		return w.err
	}
	if w.lines == nil {
		if err := w.openLines(); err != nil {
			return err
		}
	}
	if w.agency != nil {
		if err := w.endAgency(); err != nil {
			return err
		}
	}
	if err := w.handOut(0); err != nil {
		return err
	}
	if err := w.lines.Close(); err != nil {
		return w.fail(err)
	}
	t, rows := w.linesFile, w.lines.Rows()
	w.lines, w.linesFile = nil, nil
	return w.emit(t.finish(report.DatasetPrefix(report.DatasetTransactions, w.p), "transactions", "parquet", TypeParquet, rows))
}

func (w *Writer) openLines() error {
	t := newMemFile(w.dir, SmallFileBytes)
	w.linesFile, w.lines = t, newLineItemWriter(t, w.layout, true)
	return nil
}

func (w *Writer) startAgency(id string) error {
	a := &agencyLines{id: id}
	w.agency = a
	if w.formats.CSV {
		t := newMemFile(w.dir, SmallFileBytes)
		a.csvFile, a.csv = t, NewLineItemCSVWriter(t)
	}
	if w.formats.Parquet {
		t := newMemFile(w.dir, SmallFileBytes)
		a.parqFile, a.parq = t, NewLineItemWriter(t, w.layout)
	}
	return nil
}

func (w *Writer) endAgency() error {
	a := w.agency
	w.agency = nil
	c := make(chan closed, 1)
	w.closing = append(w.closing, c)
	warm.Go(func() { c <- a.finish(report.AgencyPrefix(a.id, w.p)) })
	return w.handOut(maxClosing)
}

// maxClosing is how many agencies' line-item files may be finishing at
// once.
const maxClosing = 2

// handOut hands out the finished agencies' files, in line order, until at
// most keep agencies are left finishing; after an error it discards them.
func (w *Writer) handOut(keep int) error {
	for len(w.closing) > keep {
		r := <-w.closing[0]
		w.closing = w.closing[1:]
		if r.err != nil {
			w.fail(r.err)
		}
		for _, f := range r.files {
			if w.err != nil {
				f.Discard()
				continue
			}
			w.emit(f, nil)
		}
	}
	return w.err
}

// finish closes the agency's line-item files (CSV first) and returns them
// as objects of the folder ap; on error it removes them.
func (a *agencyLines) finish(ap string) closed {
	var out closed
	if a.csv != nil {
		f, err := finishLines(a.csv.Close, a.csv.Rows, a.csvFile, ap, "csv", TypeCSV)
		if err != nil {
			a.discardParquet()
			return closed{err: err}
		}
		out.files = append(out.files, f)
	}
	if a.parq != nil {
		f, err := finishLines(a.parq.Close, a.parq.Rows, a.parqFile, ap, "parquet", TypeParquet)
		if err != nil {
			for _, f := range out.files {
				f.Discard()
			}
			return closed{err: err}
		}
		out.files = append(out.files, f)
	}
	return out
}

// finishLines closes a line-item writer (close, rows) and makes its file t
// the object ap+transactions-HASH.ext; on error t is removed.
func finishLines(close func() error, rows func() int64, t *tempFile, ap, ext, typ string) (File, error) {
	if err := close(); err != nil {
		t.discard()
		return File{}, err
	}
	return t.finish(ap, "transactions", ext, typ, rows())
}

// Rejects makes the rejects file at path (n lines, written by collect) the
// rejects dataset's object.
func (w *Writer) Rejects(path string, n int64) error {
	if w.err != nil {
		return w.err
	}
	return w.emit(hashFile(path, report.DatasetPrefix(report.DatasetRejects, w.p), "rejects", "jsonl", TypeJSONL, n))
}

// Duplicates makes the duplicates file at path (n lines of
// collect.CrossPeriod, written by collect) the duplicates dataset's object.
func (w *Writer) Duplicates(path string, n int64) error {
	if w.err != nil {
		return w.err
	}
	return w.emit(hashFile(path, report.DatasetPrefix(report.DatasetDuplicates, w.p), "duplicates", "jsonl", TypeJSONL, n))
}

// Close removes the temp files of what was not finished. It is safe to
// call at any time and more than once.
func (w *Writer) Close() {
	if w.err == nil {
		w.err = fmt.Errorf("%w", ErrClosed)
	}
	w.handOut(0)
	if w.linesFile != nil {
		w.lines.abort()
		w.linesFile.discard()
		w.linesFile, w.lines = nil, nil
	}
	if a := w.agency; a != nil {
		a.csvFile.discard()
		a.discardParquet()
		w.agency = nil
	}
}

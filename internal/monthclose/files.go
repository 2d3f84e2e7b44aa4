package monthclose

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
	"github.com/reportjob/reportjob/internal/warm"
)

// statementBase names every agency's statement file:
// agencies/agency=A/month=M/statement-H.{pdf,csv,parquet}; the month's
// dataset file is statements/month=M/statements-H.parquet.
const (
	statementBase  = "statement"
	statementsBase = "statements"
)

// encode is encodeStream for verify and a restore: every file as an
// encode.File.
func (c *Closer) encode(m string, bt *built, kept map[string][]report.FileInfo) ([]encode.File, error) {
	files, agency, err := c.encodeStream(m, bt, kept, c.placeAgencyFile)
	for _, f := range agency {
		files = append(files, c.agencyFile(f))
	}
	return files, err
}

// encodeStream writes month m's files: into the scratch folder the
// statements dataset file, the issuer's logo (document.go) and the
// adjustments file when adjustments were booked; and each agency's files
// per Formats (renders at a time), but those of the agencies in kept, by
// agency folder (unchanged: their files are published again as they
// are), each handed to place as it is rendered (placeAgencyFile: at
// agencyPath of its key; agencyPuts.add: uploaded). The statements are
// made one at a time, in agency id order (stream.go). The month's own
// files are returned as encode.Files; the agencies' files, many, only as
// what the manifest lists of them. The first error of place stops the
// rendering.
func (c *Closer) encodeStream(m string, bt *built, kept map[string][]report.FileInfo, place func(encode.File) error) ([]encode.File, []report.FileInfo, error) {
	var files []encode.File
	nf := len(c.formats().names())
	slots := make([]report.FileInfo, len(bt.ids)*nf) // agency i's files at [i*nf, (i+1)*nf)
	errs := make([]error, len(bt.ids))
	agencies := func() []report.FileInfo {
		out := slots[:0]
		for _, f := range slots {
			if f.Key != "" {
				out = append(out, f)
			}
		}
		return out
	}
	f, err := encode.NewFile(c.Dir, report.StatementsPrefix(m), statementsBase, "parquet", encode.TypeParquet, bt.rows,
		func(w io.Writer) error {
			pages := "" // the pages in temp files (a file with rows: encode.NewStatementsWriter)
			if bt.rows > 0 {
				pages = c.Dir
			}
			sw := encode.NewStatementsWriter(w, bt.numbered, pages)
			closed := false
			defer func() {
				if !closed {
					_ = sw.Close() // gives its page files back
				}
			}()
			sem := make(chan struct{}, c.renders())
			var wg sync.WaitGroup
			defer wg.Wait()
			var failed atomic.Bool
			for i := range bt.ids {
				if failed.Load() {
					break // errs has why
				}
				s, err := bt.gen(i)
				if err != nil {
					return err
				}
				if err := sw.Add(s); err != nil {
					return err
				}
				if _, ok := kept[report.AgencyMonthPrefix(s.AgencyID, s.Month)]; ok {
					continue
				}
				wg.Add(1)
				sem <- struct{}{}
				warm.Go(func() {
					defer func() { <-sem; wg.Done() }()
					fs, err := c.agencyFiles(s, true)
					for j, f := range fs {
						info := f.Info()
						if perr := place(f); perr != nil {
							err = cmp.Or(err, perr)
							continue
						}
						slots[i*nf+j] = info
					}
					if err != nil {
						failed.Store(true)
					}
					errs[i] = err
				})
			}
			closed = true
			return sw.Close()
		})
	if err != nil {
		return nil, agencies(), fmt.Errorf("encode the statements of %s: %w", m, err)
	}
	files = append(files, f)
	logo := bt.logo
	if len(bt.ids) == 0 {
		logo = nil
	}
	lf, err := c.logoFile(m, logo)
	files = append(files, lf...)
	if err != nil {
		return files, agencies(), err
	}
	if len(bt.adjRows) > 0 {
		f, err := encode.NewFile(c.Dir, report.MonthManifestPrefix(m), adjustmentsBase, "parquet", encode.TypeParquet, int64(len(bt.adjRows)),
			func(w io.Writer) error { return encode.WriteAdjustmentsParquet(w, bt.adjRows) })
		if err != nil {
			return files, agencies(), fmt.Errorf("encode the adjustments of %s: %w", m, err)
		}
		files = append(files, f)
	}
	for _, err := range errs {
		if err != nil {
			return files, agencies(), err
		}
	}
	return files, agencies(), nil
}

// renders is how many agencies' files are rendered at a time:
// Concurrency, but no more than the CPUs the process may use (at least 2).
// Rendering is CPU-bound, and each render in flight holds a few MB (the
// document, its fonts' subsets, the compressor), so more would only hold
// more memory.
func (c *Closer) renders() int {
	return max(1, min(c.Concurrency, max(2, runtime.GOMAXPROCS(0))))
}

// agencyPath is where the scratch folder holds the agency file of key
// until it is uploaded.
func (c *Closer) agencyPath(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(c.Dir, "agency-"+hex.EncodeToString(h[:16]))
}

// placeAgencyFile puts f (from agencyFiles) at agencyPath of its key:
// writes it there when it is in memory (a file's creation, write and
// close: an agency's files are small, and a month has many), or renames
// its temp file. f is discarded either way.
func (c *Closer) placeAgencyFile(f encode.File) error {
	p := c.agencyPath(f.Key)
	if f.Path != "" {
		err := os.Rename(f.Path, p)
		if err != nil {
			f.Discard()
		}
		return err
	}
	err := os.WriteFile(p, f.Data, 0o600)
	f.Discard()
	if err != nil {
		_ = os.Remove(p)
	}
	return err
}

// agencyFile returns the agency file f (written by encodeStream) as an
// encode.File.
func (c *Closer) agencyFile(f report.FileInfo) encode.File {
	return encode.File{Key: f.Key, Path: c.agencyPath(f.Key), ContentType: contentType(f.Key), Bytes: f.Bytes, Rows: f.Rows, SHA256: f.SHA256}
}

// contentType is the content type of an agency file by its extension.
func contentType(key string) string {
	switch path.Ext(key) {
	case ".pdf":
		return encode.TypePDF
	case ".csv":
		return encode.TypeCSV
	default:
		return encode.TypeParquet
	}
}

func rows(stmts []*statement.Agency) int64 {
	n := 0
	for _, s := range stmts {
		n += len(s.Lines)
	}
	return int64(n)
}

// agencyFiles writes one agency's statement files: in temp files, or,
// inMemory, in memory when small (placeAgencyFile puts them in place).
func (c *Closer) agencyFiles(s *statement.Agency, inMemory bool) ([]encode.File, error) {
	newFile := encode.NewFile
	if inMemory {
		newFile = encode.NewSmallFile
	}
	prefix := report.AgencyMonthPrefix(s.AgencyID, s.Month)
	var out []encode.File
	add := func(ok bool, ext, typ string, n int64, enc func(io.Writer) error) error {
		if !ok {
			return nil
		}
		f, err := newFile(c.Dir, prefix, statementBase, ext, typ, n, enc)
		if err != nil {
			return fmt.Errorf("encode the %s statement of agency %q: %w", ext, s.AgencyID, err)
		}
		out = append(out, f)
		return nil
	}
	one := []*statement.Agency{s}
	if err := add(c.Formats.PDF && c.RenderPDF != nil, "pdf", encode.TypePDF, 0, func(w io.Writer) error { return c.RenderPDF(w, s) }); err != nil {
		return out, err
	}
	if err := add(c.Formats.CSV, "csv", encode.TypeCSV, int64(len(s.Lines)), func(w io.Writer) error { return encode.WriteStatementCSV(w, s) }); err != nil {
		return out, err
	}
	if err := add(c.Formats.Parquet, "parquet", encode.TypeParquet, int64(len(s.Lines)), func(w io.Writer) error { return encode.WriteStatementsParquet(w, one) }); err != nil {
		return out, err
	}
	return out, nil
}

package monthclose

import (
	"fmt"
	"io"
	"sync"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// statementBase names every agency's statement file:
// agencies/agency=A/month=M/statement-H.{pdf,csv,parquet}; the month's
// dataset file is statements/month=M/statements-H.parquet.
const (
	statementBase  = "statement"
	statementsBase = "statements"
)

// encode writes month m's files into the scratch folder: the statements
// dataset file, the issuer's logo (document.go), each agency's files per Formats (PDFs Concurrency at a
// time) but those of the agencies in kept (unchanged: their files are
// published again as they are), and the adjustments file when
// adjustments were booked.
func (c *Closer) encode(m string, stmts []*statement.Agency, adjRows []report.AdjustmentRow, kept map[string][]report.FileInfo) ([]encode.File, error) {
	var files []encode.File
	f, err := encode.NewFile(c.Dir, report.StatementsPrefix(m), statementsBase, "parquet", encode.TypeParquet, rows(stmts),
		func(w io.Writer) error { return encode.WriteStatementsParquet(w, stmts) })
	if err != nil {
		return nil, fmt.Errorf("encode the statements of %s: %w", m, err)
	}
	files = append(files, f)
	logo, err := c.logoFile(m, stmts)
	files = append(files, logo...)
	if err != nil {
		return files, err
	}
	if len(adjRows) > 0 {
		f, err := encode.NewFile(c.Dir, report.MonthManifestPrefix(m), adjustmentsBase, "parquet", encode.TypeParquet, int64(len(adjRows)),
			func(w io.Writer) error { return encode.WriteAdjustmentsParquet(w, adjRows) })
		if err != nil {
			return files, fmt.Errorf("encode the adjustments of %s: %w", m, err)
		}
		files = append(files, f)
	}
	per := make([][]encode.File, len(stmts))
	errs := make([]error, len(stmts))
	sem := make(chan struct{}, max(c.Concurrency, 1))
	var wg sync.WaitGroup
	for i, s := range stmts {
		if _, ok := kept[s.AgencyID]; ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			per[i], errs[i] = c.agencyFiles(s)
		}()
	}
	wg.Wait()
	for i := range stmts {
		files = append(files, per[i]...)
		if errs[i] != nil {
			return files, errs[i]
		}
	}
	return files, nil
}

func rows(stmts []*statement.Agency) int64 {
	n := 0
	for _, s := range stmts {
		n += len(s.Lines)
	}
	return int64(n)
}

// agencyFiles writes one agency's statement files.
func (c *Closer) agencyFiles(s *statement.Agency) ([]encode.File, error) {
	prefix := report.AgencyMonthPrefix(s.AgencyID, s.Month)
	var out []encode.File
	add := func(ok bool, ext, typ string, n int64, enc func(io.Writer) error) error {
		if !ok {
			return nil
		}
		f, err := encode.NewFile(c.Dir, prefix, statementBase, ext, typ, n, enc)
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

package publish

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// ErrNoAgencyCopy means a dataset's rows of a revision cannot be rebuilt
// from the agencies' files its manifest lists: an agency's files are all
// missing or corrupt, or the agencies' files do not hold every row of the
// dataset (report.agency_files was [] or left agencies out).
var ErrNoAgencyCopy = errors.New("the agencies' files do not hold the whole dataset")

// The agencies' summary and adjustments files hold the same rows as the
// summary and adjustments datasets, split by agency. When the dataset file
// of the current revision is lost, verify --repair reads the rows back
// from them (AgencySummary, AgencyAdjustments), so that the revision can be
// restored rather than replaced by one that lost its correction record.
//
// A revision's rows are rebuilt only when every row is accounted for: for
// each agency folder the manifest lists files of the dataset's kind in, one
// intact file (size and SHA-256 as listed; Parquet first, then CSV), whose
// rows are that agency's, of the period, and as many as the manifest says;
// and the rows of all agencies together as many as the dataset file had.

// AgencySummary rebuilds the summary rows of cur's revision from the
// agencies' summary files its manifest lists (see above).
func (pb *Publisher) AgencySummary(ctx context.Context, cur *Current, dir string) ([]report.SummaryRow, error) {
	return fromAgencies(ctx, pb, cur, dir, report.DatasetSummary, agencyReader[report.SummaryRow]{
		csv: encode.ReadSummaryCSV, writeCSV: encode.WriteSummaryCSV, parquet: encode.ReadSummaryParquet,
		summary: func(r *report.SummaryRow) *report.SummaryRow { return r },
	})
}

// AgencyAdjustments rebuilds the adjustments rows of cur's revision from
// the agencies' adjustments files its manifest lists (see above); every
// row must be of cur's revision.
func (pb *Publisher) AgencyAdjustments(ctx context.Context, cur *Current, dir string) ([]report.AdjustmentRow, error) {
	rows, err := fromAgencies(ctx, pb, cur, dir, report.DatasetAdjustments, agencyReader[report.AdjustmentRow]{
		csv: encode.ReadAdjustmentsCSV, writeCSV: encode.WriteAdjustmentsCSV, parquet: encode.ReadAdjustmentsParquet,
		summary: func(r *report.AdjustmentRow) *report.SummaryRow { return &r.SummaryRow },
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if int(r.Revision) != cur.Manifest.Revision {
			return nil, fmt.Errorf("%w: agency %q's adjustments are of revision %d, not %d",
				ErrNoAgencyCopy, r.AgencyID, r.Revision, cur.Manifest.Revision)
		}
	}
	return rows, nil
}

// agencyReader reads one kind of agency file.
type agencyReader[T any] struct {
	csv      func(r io.Reader, agency string) ([]T, error)
	writeCSV func(w io.Writer, rows []T) error
	parquet  func(r io.ReaderAt, size int64) ([]T, error)
	summary  func(*T) *report.SummaryRow
}

// fromAgencies rebuilds dataset's rows of cur's revision from the agency
// files of that kind (see above), sorted by (agency, currency) as the
// dataset file is.
func fromAgencies[T any](ctx context.Context, pb *Publisher, cur *Current, dir, dataset string, rd agencyReader[T]) ([]T, error) {
	prefix := report.DatasetPrefix(dataset, cur.Period)
	want := int64(-1)
	files := map[string][]report.FileInfo{} // escaped agency -> its files of the kind
	for _, f := range cur.Manifest.Files {
		if strings.HasPrefix(f.Key, prefix) {
			want = f.Rows
			continue
		}
		esc, ok := report.AgencySegment(f.Key)
		if ok && strings.HasPrefix(f.Key[strings.LastIndexByte(f.Key, '/')+1:], dataset+"-") {
			files[esc] = append(files[esc], f)
		}
	}
	if want < 0 {
		return nil, fmt.Errorf("revision %d of %s lists no %s file", cur.Manifest.Revision, cur.Period.Name(), dataset)
	}
	var rows []T
	for _, esc := range slices.Sorted(maps.Keys(files)) {
		agency, err := url.PathUnescape(esc)
		if err != nil || keys.EscapeAgency(agency) != esc {
			return nil, fmt.Errorf("%w: agency folder %q", ErrNoAgencyCopy, esc)
		}
		fs := files[esc]
		// Parquet first: typed, no parsing.
		slices.SortStableFunc(fs, func(a, b report.FileInfo) int { return isCSV(a.Key) - isCSV(b.Key) })
		var errs []error
		got := false
		for _, f := range fs {
			r, err := readAgencyFile(ctx, pb, cur.Period, f, agency, dir, rd)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", pb.Bucket.URL(f.Key), err))
				continue
			}
			rows, got = append(rows, r...), true
			break
		}
		if !got {
			return nil, fmt.Errorf("%w: agency %q: %w", ErrNoAgencyCopy, agency, errors.Join(errs...))
		}
	}
	if int64(len(rows)) != want {
		return nil, fmt.Errorf("%w: they hold %d of its %d rows", ErrNoAgencyCopy, len(rows), want)
	}
	slices.SortStableFunc(rows, func(a, b T) int {
		x, y := rd.summary(&a), rd.summary(&b)
		return cmp.Or(cmp.Compare(x.AgencyID, y.AgencyID), cmp.Compare(x.Currency.Code, y.Currency.Code))
	})
	return rows, nil
}

// readAgencyFile reads the rows of agency's listed file f, and checks
// them: agency's, of period p, as many as listed. A CSV counts only if its
// rows, written again, give its bytes back (the reading is exact).
func readAgencyFile[T any](ctx context.Context, pb *Publisher, p report.Period, f report.FileInfo, agency, dir string,
	rd agencyReader[T]) ([]T, error) {
	file, n, err := pb.fetch(ctx, f, dir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(file.Name())
	defer file.Close()
	var rows []T
	if strings.HasSuffix(f.Key, ".parquet") {
		rows, err = rd.parquet(file, n)
	} else {
		var body []byte
		if body, err = io.ReadAll(io.NewSectionReader(file, 0, n)); err == nil {
			rows, err = rd.csv(bytes.NewReader(body), agency)
		}
		var again bytes.Buffer
		if err == nil {
			err = rd.writeCSV(&again, rows)
		}
		if err == nil && !bytes.Equal(again.Bytes(), body) {
			err = errors.New("its rows do not write back to the same bytes")
		}
	}
	if err != nil {
		return nil, err
	}
	if int64(len(rows)) != f.Rows {
		return nil, fmt.Errorf("%d rows; the manifest says %d", len(rows), f.Rows)
	}
	for i := range rows {
		s := rd.summary(&rows[i])
		if s.AgencyID != agency || !s.PeriodStart.Equal(p.Start) || !s.PeriodEnd.Equal(p.End) {
			return nil, fmt.Errorf("row %d is agency %q's of %s", i, s.AgencyID, report.Period{Start: s.PeriodStart, End: s.PeriodEnd}.Name())
		}
	}
	return rows, nil
}

// isCSV is 1 for a CSV file's key, else 0.
func isCSV(key string) int {
	if strings.HasSuffix(key, ".csv") {
		return 1
	}
	return 0
}

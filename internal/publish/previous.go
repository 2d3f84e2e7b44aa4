package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
)

// PreviousSummary reads the summary rows of cur's published revision, to
// compute a restatement's adjustments. The file is downloaded into dir and
// checked against the manifest's SHA-256 first.
func (pb *Publisher) PreviousSummary(ctx context.Context, cur *Current, dir string) ([]report.SummaryRow, error) {
	f, n, err := pb.download(ctx, cur, report.DatasetSummary, dir)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("revision %d of %s lists no summary file", cur.Manifest.Revision, cur.Period.Name())
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return encode.ReadSummaryParquet(f, n)
}

// PreviousAdjustments reads the adjustments rows of cur's published
// revision (nil when it has none), so that a rebuild that reproduces the
// revision reproduces its adjustments too.
func (pb *Publisher) PreviousAdjustments(ctx context.Context, cur *Current, dir string) ([]report.AdjustmentRow, error) {
	f, n, err := pb.download(ctx, cur, report.DatasetAdjustments, dir)
	if err != nil || f == nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return encode.ReadAdjustmentsParquet(f, n)
}

// PreviousLineRates calls fn with the transaction_id and commission_bps
// of every line item of cur's published revision (the rates it billed its
// transactions at), read from its transactions Parquet, in file order.
// listed is false when the revision lists no transactions file (it was
// published without line items): fn is then never called.
func (pb *Publisher) PreviousLineRates(ctx context.Context, cur *Current, dir string, fn func(id []byte, bps int32) error) (listed bool, err error) {
	f, n, err := pb.download(ctx, cur, report.DatasetTransactions, dir)
	if err != nil || f == nil {
		return false, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return true, encode.ReadLineItemRates(f, n, fn)
}

// PreviousDuplicates downloads the duplicates object of cur's published
// revision (its cross-period decisions, collect.CrossPeriod lines) into a
// temp file in dir, checked against the manifest: nil when the revision
// lists none. The caller closes and removes the file.
func (pb *Publisher) PreviousDuplicates(ctx context.Context, cur *Current, dir string) (*os.File, error) {
	f, _, err := pb.download(ctx, cur, report.DatasetDuplicates, dir)
	if err != nil || f == nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("read the current revision's %s: %w", report.DatasetDuplicates, err)
	}
	return f, nil
}

// download fetches the dataset's object that cur's manifest lists into a
// temp file in dir, checked against the manifest's size and SHA-256; nil
// when the manifest lists none.
func (pb *Publisher) download(ctx context.Context, cur *Current, dataset, dir string) (*os.File, int64, error) {
	prefix := report.DatasetPrefix(dataset, cur.Period)
	var info *report.FileInfo
	for i, f := range cur.Manifest.Files {
		if strings.HasPrefix(f.Key, prefix) {
			info = &cur.Manifest.Files[i]
		}
	}
	if info == nil {
		return nil, 0, nil
	}
	f, n, err := pb.fetch(ctx, *info, dir)
	if err != nil {
		return nil, 0, fmt.Errorf("read the current revision's %s: %w", dataset, err)
	}
	return f, n, nil
}

// fetch downloads the listed object info into a temp file in dir, checked
// against its size and SHA-256.
func (pb *Publisher) fetch(ctx context.Context, info report.FileInfo, dir string) (*os.File, int64, error) {
	r, _, err := pb.Bucket.Get(ctx, info.Key)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	f, err := os.CreateTemp(dir, "prev-*")
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		if sum := hex.EncodeToString(h.Sum(nil)); sum != info.SHA256 || n != info.Bytes {
			err = fmt.Errorf("%s is corrupt (%d bytes, sha256 %s; the manifest says %d, %s): run verify --repair",
				pb.Bucket.URL(info.Key), n, sum, info.Bytes, info.SHA256)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, err
	}
	return f, n, nil
}

// Fetch downloads the listed object info into a temp file in dir, checked
// against its size and SHA-256. The caller closes and removes the file.
func (pb *Publisher) Fetch(ctx context.Context, info report.FileInfo, dir string) (*os.File, int64, error) {
	return pb.fetch(ctx, info, dir)
}

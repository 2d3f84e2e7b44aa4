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
	prefix := report.DatasetPrefix(report.DatasetSummary, cur.Period)
	var info *report.FileInfo
	for i, f := range cur.Manifest.Files {
		if strings.HasPrefix(f.Key, prefix) {
			info = &cur.Manifest.Files[i]
		}
	}
	if info == nil {
		return nil, fmt.Errorf("revision %d of %s lists no summary file", cur.Manifest.Revision, cur.Period.Name())
	}
	r, _, err := pb.Bucket.Get(ctx, info.Key)
	if err != nil {
		return nil, fmt.Errorf("read the previous revision's summary: %w", err)
	}
	defer r.Close()
	f, err := os.CreateTemp(dir, "prev-summary-*")
	if err != nil {
		return nil, fmt.Errorf("read the previous revision's summary: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return nil, fmt.Errorf("read the previous revision's summary %s: %w", pb.Bucket.URL(info.Key), err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != info.SHA256 || n != info.Bytes {
		return nil, fmt.Errorf("the previous revision's summary %s is corrupt (%d bytes, sha256 %s; the manifest says %d, %s): run verify --repair",
			pb.Bucket.URL(info.Key), n, sum, info.Bytes, info.SHA256)
	}
	return encode.ReadSummaryParquet(f, n)
}

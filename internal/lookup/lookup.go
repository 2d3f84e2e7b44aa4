// Package lookup answers support's questions from the delivered record
// (SPEC section 8): one agency's billed lines newest first, one
// transaction's history, the rejects of a range. It reads what was
// published, the latest revision of each period through its manifest,
// never the table: by key, period by period from a cursor, never a scan
// of everything.
//
// Order. Newest first means periods by start descending, and within a
// period by (sort_key, then transaction id) descending for lines, by
// (sort_key, partition_key) descending for rejects. A position in that
// order (period start, sort key, tie-break) is what a cursor names: the
// next page starts right after it, whatever revision the period has by
// then (see Cursor).
//
// Cost. A page reads each period's manifest from the cursor back to the
// page's last line (one GET each, up to 8 in flight), and for each period with
// rows in the page one object: the agency's own transactions file
// (agencies/agency=A/period=P/transactions-H.parquet, else .csv), or,
// when the period has no agency files, its summary (to see whether the
// agency has rows) and then its transactions Parquet. A period whose
// manifest is split into parts costs one LIST of the agency's folder
// instead of reading the parts. So a page costs O(page + periods
// touched), never O(the agency's history).
package lookup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// Objects is the delivered record: *sink.Bucket. ReadAll returns an
// error wrapping sink.ErrNotFound for a missing key; List returns the
// objects under a prefix in ascending key order.
type Objects interface {
	ReadAll(ctx context.Context, key string, max int64) ([]byte, sink.Attrs, error)
	List(ctx context.Context, prefix string) ([]sink.Attrs, error)
}

// MaxObjectBytes bounds an object a look-up reads whole (a period's
// transactions Parquet at the most).
const MaxObjectBytes = 2 << 30

// manifestReads is how many manifests a look-up reads ahead at once.
const manifestReads = 8

// DefaultLimit is the page size when none is given.
const DefaultLimit = 50

// Reader reads the delivered record.
type Reader struct {
	Objects Objects
	// Periods are the job's periods (report.Grid) a look-up may read, in
	// any order; a period without a manifest is skipped.
	Periods []report.Period

	gets, lists atomic.Int64
}

// Requests returns how many objects the Reader read and listed so far.
func (r *Reader) Requests() (gets, lists int64) { return r.gets.Load(), r.lists.Load() }

// newestFirst returns the periods of r that start in [from, to), newest first;
// a zero from or to leaves that side open.
func (r *Reader) newestFirst(from, to time.Time) []report.Period {
	var out []report.Period
	for _, p := range r.Periods {
		if (!from.IsZero() && p.Start.Before(from)) || (!to.IsZero() && !p.Start.Before(to)) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b report.Period) int { return b.Start.Compare(a.Start) })
	return out
}

func (r *Reader) readAll(ctx context.Context, key string) ([]byte, error) {
	r.gets.Add(1)
	b, _, err := r.Objects.ReadAll(ctx, key, MaxObjectBytes)
	return b, err
}

func (r *Reader) list(ctx context.Context, prefix string) ([]sink.Attrs, error) {
	r.lists.Add(1)
	return r.Objects.List(ctx, prefix)
}

// manifest reads a period's manifest.json (not its parts); nil when the
// period was never delivered.
func (r *Reader) manifest(ctx context.Context, p report.Period) (*report.Manifest, error) {
	raw, err := r.readAll(ctx, report.ManifestKey(p))
	if errors.Is(err, driver.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest of %s: %w", p.Name(), err)
	}
	m, err := report.ParseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("read manifest of %s: %w", p.Name(), err)
	}
	return m, nil
}

// manifests yields the manifests of ps in order (nil for a period never
// delivered), reading ahead in batches of 1, 2, 4, then manifestReads at
// once (a page that ends in the first period reads one manifest); it
// stops at the first error, or when fn returns false.
func (r *Reader) manifests(ctx context.Context, ps []report.Period, fn func(i int, m *report.Manifest) (bool, error)) error {
	for lo, n := 0, 1; lo < len(ps); lo, n = lo+n, min(2*n, manifestReads) {
		hi := min(lo+n, len(ps))
		ms := make([]*report.Manifest, hi-lo)
		errs := make([]error, hi-lo)
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			wg.Go(func() { ms[i-lo], errs[i-lo] = r.manifest(ctx, ps[i]) })
		}
		wg.Wait()
		for i := lo; i < hi; i++ {
			if errs[i-lo] != nil {
				return errs[i-lo]
			}
			more, err := fn(i, ms[i-lo])
			if err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// datasetFile returns the manifest's file of dataset (the period has at
// most one), false when it lists none.
func datasetFile(m *report.Manifest, dataset string) (report.FileInfo, bool) {
	prefix := report.DatasetPrefix(dataset, m.Period())
	for _, f := range m.Files {
		if strings.HasPrefix(f.Key, prefix) {
			return f, true
		}
	}
	return report.FileInfo{}, false
}

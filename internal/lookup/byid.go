package lookup

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
)

// Claims is the dedupe index, read by id: collect.Index's Lookup.
type Claims interface {
	Lookup(ctx context.Context, job string, ids []string) ([]collect.Claim, error)
}

// History is what the delivered record says of one transaction id.
type History struct {
	ID string
	// Claim is the dedupe index's entry (nil: none; the window is 0, the
	// claim expired, or the id was never billed).
	Claim *collect.Claim
	// Billed are the lines that bill the id: the claim's period's, or,
	// in a range search, every period's of the range that bills it.
	Billed []Line
	// AgencyKeys holds, per billed line (same index), the agency's own
	// transactions files that hold it ("" when there is none).
	AgencyKeys []string
	// Rejects are the rejects whose item carries the id, in the periods
	// read.
	Rejects []Reject
	// Searched counts the periods whose files were read.
	Searched int
}

// ByID looks id up: in the dedupe index (one read), then in the claim's
// period (its manifest, its transactions Parquet and its rejects): O(1) in
// the number of periods. With from and to not zero it searches the
// periods that start in [from, to) instead, whatever the index says:
// O(periods of the range).
func (r *Reader) ByID(ctx context.Context, idx Claims, job, id string, from, to time.Time) (History, error) {
	h := History{ID: id}
	if idx != nil {
		cls, err := idx.Lookup(ctx, job, []string{id})
		if err != nil {
			return h, fmt.Errorf("look up the dedupe index: %w", err)
		}
		for i := range cls {
			if cls[i].ID == id {
				h.Claim = &cls[i]
			}
		}
	}
	var ps []report.Period
	switch {
	case !from.IsZero() || !to.IsZero():
		ps = r.newestFirst(from, to)
	case h.Claim != nil:
		p := report.Period{Start: h.Claim.Period.UTC(), End: h.Claim.End.UTC()}
		for _, q := range r.Periods {
			if q.Start.Equal(p.Start) {
				p = q
			}
		}
		ps = []report.Period{p}
	default:
		return h, nil
	}
	err := r.manifests(ctx, ps, func(_ int, m *report.Manifest) (bool, error) {
		if m == nil {
			return true, nil
		}
		h.Searched++
		if tf, ok := datasetFile(m, report.DatasetTransactions); ok && tf.Rows > 0 {
			b, err := r.readAll(ctx, tf.Key)
			if err != nil {
				return false, err
			}
			lis, err := encode.ReadLineItemsParquet(bytes.NewReader(b), int64(len(b)), encode.LineFilter{ID: id})
			if err != nil {
				return false, fmt.Errorf("%s: %w", tf.Key, err)
			}
			for _, l := range toLines(m, tf.Key, lis) {
				h.Billed = append(h.Billed, l)
				h.AgencyKeys = append(h.AgencyKeys, agencyLinesKey(m, l.Tx.AgencyID))
			}
		}
		rs, err := r.periodRejects(ctx, m)
		if err != nil {
			return false, err
		}
		for _, rj := range rs {
			if rj.Attr("transaction_id") == id {
				h.Rejects = append(h.Rejects, rj)
			}
		}
		return true, nil
	})
	return h, err
}

// agencyLinesKey returns the agency's transactions file of m's period
// (Parquet before CSV), "" when m lists none (or lists the agency files in
// parts).
func agencyLinesKey(m *report.Manifest, agency string) string {
	prefix := report.AgencyPrefix(agency, m.Period())
	var csv string
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Key, prefix) {
			continue
		}
		switch format, _ := encode.IsLineItemsKey(f.Key); format {
		case "parquet":
			return f.Key
		case "csv":
			csv = f.Key
		}
	}
	return csv
}

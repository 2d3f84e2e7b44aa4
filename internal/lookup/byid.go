package lookup

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
)

// Claims is the dedupe index, read by id: collect.Index's Lookup. When it
// is a Sightings too (both stores' indexes are), ByID also finds the
// copies dropped or rejected in other periods.
type Claims interface {
	Lookup(ctx context.Context, job string, ids []string) ([]collect.Claim, error)
}

// Sightings reads the index's sightings of an id (collect.SightingIndex).
type Sightings interface {
	Sightings(ctx context.Context, job, id string) ([]collect.Sighting, error)
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
	// Sightings are the index's records of copies of the id that a period
	// dropped (an identical copy of what another period billed) or
	// rejected, oldest period first; nil when the index keeps none.
	Sightings []collect.Sighting
	// NoLineItems are the periods read that could bill the id but
	// delivered no line items (report.line_items was false): the claim's
	// period, or in a range search every such period of the range. Their
	// lines, and so the id's amount, cannot be shown.
	NoLineItems []NoLineItems
	// Searched counts the periods whose files were read.
	Searched int
}

// ByID looks id up: in the dedupe index (its claim and its sightings: a
// read each), then in the claim's period (its manifest, its transactions
// Parquet and its rejects) and in the periods of the sightings (manifest
// and rejects): O(1) in the number of periods. With from and to not zero
// it searches the periods that start in [from, to) instead, whatever the
// index says: O(periods of the range).
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
		if sr, ok := idx.(Sightings); ok {
			ss, err := sr.Sightings(ctx, job, id)
			if err != nil {
				return h, fmt.Errorf("read the sightings in the dedupe index: %w", err)
			}
			slices.SortFunc(ss, func(a, b collect.Sighting) int { return a.Period.Compare(b.Period) })
			h.Sightings = append([]collect.Sighting{}, ss...)
		}
	}
	ranged := !from.IsZero() || !to.IsZero()
	var ps []report.Period
	var billing time.Time
	if ranged {
		ps = r.newestFirst(from, to)
	} else {
		// The periods the index names: the billing one and the sightings'.
		starts := map[int64]bool{}
		if h.Claim != nil {
			billing = h.Claim.Period
			starts[billing.UnixMilli()] = true
		}
		for _, s := range h.Sightings {
			starts[s.Period.UnixMilli()] = true
		}
		for ms := range starts {
			p, ok := r.period(time.UnixMilli(ms).UTC())
			if !ok {
				// Not a period of the grid read (a backfill past the
				// checkpoint): its manifest names it by its start.
				p = report.Period{Start: time.UnixMilli(ms).UTC(), End: time.UnixMilli(ms).UTC()}
			}
			ps = append(ps, p)
		}
		slices.SortFunc(ps, func(a, b report.Period) int { return b.Start.Compare(a.Start) })
	}
	err := r.manifests(ctx, ps, func(_ int, m *report.Manifest) (bool, error) {
		if m == nil {
			return true, nil
		}
		h.Searched++
		if !lineItemsDelivered(m) && (ranged || m.PeriodStart.Equal(billing)) {
			h.NoLineItems = append(h.NoLineItems, NoLineItems{Period: m.Period(), Revision: m.Revision, Transactions: m.Transactions})
		}
		if tf, ok := datasetFile(m, report.DatasetTransactions); ok && tf.Rows > 0 && (ranged || m.PeriodStart.Equal(billing)) {
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

// period returns the period of r that starts at start.
func (r *Reader) period(start time.Time) (report.Period, bool) {
	for _, p := range r.Periods {
		if p.Start.Equal(start) {
			return p, true
		}
	}
	return report.Period{}, false
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

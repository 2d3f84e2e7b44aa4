package job

import (
	"context"
	"fmt"
	"os"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
)

// decisions returns what a rebuild of cur's period keeps from its current
// revision (SPEC section 3, "What a rebuild keeps"), nil for a period never
// delivered, and the function that releases it. The transactions it billed
// stay billed (prices' billed rates: its line items, when it has them);
// the copies it dropped or rejected because another period billed them
// stay so, read back from its duplicates object when it records them
// (report.RecordDecisions). A revision delivered before they were recorded
// has only the dedupe index for those. verify --repair of a revision
// whose duplicates object is missing or corrupt looks them up in the
// index (a warning says so).
func (r *runner) decisions(ctx context.Context, pb *publish.Publisher, cur *publish.Current, m mode, dir string,
	prices *pricing.Pricer) (collect.Previous, func(), error) {
	none := func() {}
	man := cur.Manifest
	if man == nil {
		return nil, none, nil
	}
	billed := prices.Billed()
	if !man.CrossPeriodDecisions {
		if billed == nil {
			return nil, none, nil
		}
		return collect.NewPreviousRevision(nil, billed), none, nil
	}
	f, err := pb.PreviousDuplicates(ctx, cur, dir)
	switch {
	case err != nil && m.repair:
		r.j.Log.With(LogPeriod, cur.Period.Name()).Warn(
			"the current revision's duplicates are unreadable: its cross-period decisions are looked up in the dedupe index", "err", err)
		return collect.NewPreviousRevision(nil, billed), none, nil
	case err != nil:
		return nil, nil, err
	case f == nil:
		return collect.NewPreviousRevision(nil, billed), none, nil
	}
	return collect.NewPreviousRevision(f, billed), func() {
		f.Close()
		os.Remove(f.Name())
	}, nil
}

// keepsBilling returns nil when built, the rebuild of cur's period from
// the items col read, may replace cur: always when the items changed (a
// late item, a restatement) or on purpose (verify --repair --reprice).
// Items unchanged, a rebuild keeps every decision cur made (SPEC section
// 3), so it bills exactly what cur billed; when it would not, a decision
// of cur could not be read back (its duplicates object or line items
// lost, or a period without line items whose claims moved or expired) and
// the index decided in its place. Then it returns an error wrapping
// ErrNotRepairable: cur stays the record. This is the one place that
// refuses a rebuild that would change what was billed though no item did.
func keepsBilling(cur, built *report.Manifest, col *collect.Collected, m mode) error {
	if cur == nil || m.reprice || !sameItems(cur, col) || built.SameBilling(cur) {
		return nil
	}
	return fmt.Errorf("%w: rebuilt from the same %d items, revision %d would bill %d transactions "+
		"(%d copies dropped as duplicates of other periods, %d rejects) where revision %d bills %d (%d, %d)%s: "+
		"a decision of revision %d could not be read back from it (its duplicates object or line items are missing, "+
		"or it has no line items) and the dedupe index decided in its place; revision %d is kept as it is "+
		"(restore its objects from a copy, then run verify --repair again)",
		ErrNotRepairable, cur.ItemsRead, built.Revision, built.Transactions, built.DuplicatesAcrossPeriods, built.Rejects,
		cur.Revision, cur.Transactions, cur.DuplicatesAcrossPeriods, cur.Rejects, totalsDiffer(cur, built),
		cur.Revision, cur.Revision)
}

// totalsDiffer says ", other totals" when only the totals tell cur and
// built apart.
func totalsDiffer(cur, built *report.Manifest) string {
	if cur.Transactions == built.Transactions && cur.DuplicatesAcrossPeriods == built.DuplicatesAcrossPeriods &&
		cur.Rejects == built.Rejects && cur.DuplicatesWithinPeriod == built.DuplicatesWithinPeriod {
		return ", with other totals (other prices)"
	}
	return ""
}

// checkNotBooked returns an error wrapping ErrNotRepairable when a rebuild
// of delivered period p, which has no manifest, must not publish: the
// statements account for a revision of p after the first. The rebuild
// would publish revision 1 over it, and the restatements that follow
// would be numbered as revisions the statements booked already, and never
// booked. (A lost manifest of a revision 1 is made again: same objects,
// same digest.)
func (r *runner) checkNotBooked(ctx context.Context, p report.Period) error {
	booked, err := r.closer().Booked(ctx, p)
	if err != nil {
		return fmt.Errorf("read which revision the statements account for: %w", err)
	}
	if booked > 1 {
		return fmt.Errorf("%w: the manifest of period %s is lost, and the statements account for its revision %d: "+
			"a rebuild would publish revision 1 over it; restore %s from a copy of the sink, then run verify again",
			ErrNotRepairable, p.Name(), booked, report.ManifestKey(p))
	}
	return nil
}

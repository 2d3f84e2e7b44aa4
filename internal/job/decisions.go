package job

import (
	"context"
	"os"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/publish"
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

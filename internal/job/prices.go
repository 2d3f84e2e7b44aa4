package job

import (
	"context"
	"fmt"

	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/publish"
)

// prices returns the Pricer of a build of cur's period (pricing.ForPeriod
// decides; this only gathers what it needs): for a rebuild of a revision
// that billed transactions, the rates it billed them at, read from its
// transactions Parquet when it has one. verify --repair of a revision
// whose transactions Parquet is missing or corrupt prices with the table
// its manifest records (the line items cannot be read back; a warning says
// so). The caller closes the Pricer.
func (r *runner) prices(ctx context.Context, pb *publish.Publisher, cur *publish.Current, m mode, dir string) (*pricing.Pricer, error) {
	man := cur.Manifest
	if man == nil {
		return pricing.ForPeriod(nil, r.j.Rates, m.reprice), nil
	}
	rev := &pricing.Revision{Table: man.Rates, Transactions: man.Transactions}
	if m.reprice || man.Transactions == 0 {
		return pricing.ForPeriod(rev, r.j.Rates, m.reprice), nil
	}
	billed := pricing.NewBilled(dir, r.j.SortMemBytes)
	listed, err := pb.PreviousLineRates(ctx, cur, dir, billed.Add)
	if err == nil && listed && billed.Len() != man.Transactions {
		err = fmt.Errorf("read the current revision's transactions: %d line items, the manifest bills %d transactions",
			billed.Len(), man.Transactions)
	}
	switch {
	case err != nil && m.repair:
		r.j.Log.With(LogPeriod, cur.Period.Name()).Warn(
			"the current revision's line items are unreadable: pricing with the rates its manifest records", "err", err)
		billed.Close()
	case err != nil:
		billed.Close()
		return nil, err
	case !listed:
		billed.Close()
	default:
		rev.Billed = billed
	}
	return pricing.ForPeriod(rev, r.j.Rates, m.reprice), nil
}

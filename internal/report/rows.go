package report

import (
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
)

// SummaryRow is one row of the summary dataset and of an agency's summary
// file: one agency's totals in one currency for one period. Amounts are
// minor units of Currency, in 128 bits (DECIMAL(38,4) in the files): no
// period's sum can overflow. Net = Gross - Refunds; Commission is the sum
// of the line commissions, refunds' negative.
type SummaryRow struct {
	PeriodStart   time.Time
	PeriodEnd     time.Time
	AgencyID      string
	Currency      money.Currency
	PurchaseCount int64
	RefundCount   int64
	Gross         money.Total
	Refunds       money.Total
	Net           money.Total
	Commission    money.Total
}

// AdjustmentRow is one row of the adjustments dataset: what Revision adds
// to (or, negative, takes from) the revision before it, for one agency and
// currency. Counts and amounts are differences.
type AdjustmentRow struct {
	SummaryRow
	Revision int32
}

// LineItem is one row of the transactions dataset and of an agency's
// transactions file.
type LineItem struct {
	Tx item.Transaction
	// BPS is the rate applied: the item's own, else the agency's from
	// config, else the default.
	BPS int32
	// Commission in minor units; negative for a refund.
	Commission int64
}

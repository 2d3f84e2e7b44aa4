package report

import (
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
)

// SummaryRow is one row of summary.parquet and summary.csv: one agency's
// totals in one currency for one period. Amounts are minor units of
// Currency; Net = Gross - Refunds; Commission is purchases' commission
// less refunds' commission.
type SummaryRow struct {
	PeriodStart   time.Time
	PeriodEnd     time.Time
	AgencyID      string
	Currency      money.Currency
	PurchaseCount int64
	RefundCount   int64
	Gross         int64
	Refunds       int64
	Net           int64
	Commission    int64
}

// LineItem is one row of transactions.parquet.
type LineItem struct {
	Tx item.Transaction
	// BPS is the rate applied: the item's own, else the agency's from
	// config, else the default.
	BPS int32
	// Commission in minor units; negative for a refund.
	Commission int64
}

package item

import (
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// Kind is a transaction's kind.
type Kind string

const (
	Purchase Kind = "purchase"
	Refund   Kind = "refund"
)

// Transaction is a valid, billable item.
type Transaction struct {
	PK, SK     string
	ID         string
	AgencyID   string
	CustomerID string
	ProductID  string
	Kind       Kind
	Currency   money.Currency
	// Amount in minor units of Currency, always > 0 (a refund is a
	// positive amount of kind Refund).
	Amount int64
	// BPS is the item's own commission_bps when HasBPS.
	BPS    int32
	HasBPS bool
	// RecordedAt is recorded_at, or the sort key's second when the item
	// has none. UTC.
	RecordedAt time.Time
}

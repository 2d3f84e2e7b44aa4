// Package item defines a stored billing item as the data table holds it,
// independent of the store that holds it.
//
// A store keeps every attribute with its DynamoDB-style type (S or N) and
// its exact text, so that amounts are never rounded through float64 on the
// way in or out.
package item

// Type is an attribute's type as the store holds it.
type Type uint8

const (
	// String is DynamoDB's S.
	String Type = iota + 1
	// Number is DynamoDB's N: the exact decimal text, e.g. "19.99".
	Number
	// Other is any other type (BOOL, L, M, B, NULL...). Text is a short
	// description for reject reasons, never billed.
	Other
)

func (t Type) String() string {
	switch t {
	case String:
		return "S"
	case Number:
		return "N"
	default:
		return "other"
	}
}

// Value is one attribute: its type and its text.
type Value struct {
	Type Type
	Text string
}

// S returns a string attribute.
func S(s string) Value { return Value{Type: String, Text: s} }

// N returns a number attribute holding the exact decimal text s.
func N(s string) Value { return Value{Type: Number, Text: s} }

// Item is one item of the data table: its partition key (PK), its sort key
// (SK) and its other attributes. Attrs never holds the key attributes; the
// store maps PK and SK to the configured attribute names.
type Item struct {
	PK    string
	SK    string
	Attrs map[string]Value
}

// Attribute names of the producer contract (README "Items").
const (
	AttrTransactionID = "transaction_id"
	AttrAgencyID      = "agency_id"
	AttrAmount        = "amount"
	AttrCurrency      = "currency"
	AttrKind          = "kind"
	AttrCommissionBPS = "commission_bps"
	AttrCustomerID    = "customer_id"
	AttrProductID     = "product_id"
	AttrRecordedAt    = "recorded_at"
)

// ContractAttrs are the attribute names of the producer contract, in the
// order Contract returns their values (and validation checks them).
var ContractAttrs = [NumContractAttrs]string{
	AttrTransactionID, AttrAgencyID, AttrAmount, AttrCurrency, AttrKind,
	AttrCommissionBPS, AttrCustomerID, AttrProductID, AttrRecordedAt,
}

// NumContractAttrs is the number of attributes of the producer contract.
const NumContractAttrs = 9

// Positions in ContractAttrs.
const (
	idxTransactionID = iota
	idxAgencyID
	idxAmount
	idxCurrency
	idxKind
	idxCommissionBPS
	idxCustomerID
	idxProductID
	idxRecordedAt
)

// contractIndex returns name's position in ContractAttrs, -1 if none.
func contractIndex(name string) int {
	switch name {
	case AttrTransactionID:
		return idxTransactionID
	case AttrAgencyID:
		return idxAgencyID
	case AttrAmount:
		return idxAmount
	case AttrCurrency:
		return idxCurrency
	case AttrKind:
		return idxKind
	case AttrCommissionBPS:
		return idxCommissionBPS
	case AttrCustomerID:
		return idxCustomerID
	case AttrProductID:
		return idxProductID
	case AttrRecordedAt:
		return idxRecordedAt
	}
	return -1
}

// Contract returns the item's contract attributes in ContractAttrs order,
// with a bit set in present (1<<i) for each one the item has. It walks
// Attrs once instead of looking every name up.
func (it *Item) Contract() (vals [NumContractAttrs]Value, present uint16) {
	for name, v := range it.Attrs {
		if i := contractIndex(name); i >= 0 {
			vals[i] = v
			present |= 1 << i
		}
	}
	return vals, present
}

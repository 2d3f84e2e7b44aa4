package item

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
)

// FieldSortKey is RejectError.Field when the item has no recorded_at and
// its sort key does not encode a time.
const FieldSortKey = "sort_key"

// maxRejectValue bounds RejectError.Value, in bytes.
const maxRejectValue = 64

// Attribute limits of the producer contract (README "Items").
const (
	maxTransactionID = 256 // characters
	maxAgencyID      = 128 // characters
	maxOptionalID    = 256 // characters, customer_id and product_id
	maxBPS           = 10000
)

// recordedAtLayout is how Item writes recorded_at: RFC 3339, UTC, milliseconds.
const recordedAtLayout = "2006-01-02T15:04:05.000Z"

// RejectError says why an item cannot be billed: the attribute (Field, ""
// for a reason about the whole item), its offending value (Value, at most
// 64 bytes of it followed by "..." when longer; "" when absent) and Reason.
type RejectError struct {
	Field, Value, Reason string
}

// Error returns e.g. `amount "19.999": more fraction digits than USD has (2)`,
// or `agency_id: missing` when there is no value.
func (e *RejectError) Error() string {
	switch {
	case e.Field == "":
		return e.Reason
	case e.Value == "":
		return e.Field + ": " + e.Reason
	default:
		return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Reason)
	}
}

func reject(field, value, reason string) *RejectError {
	return &RejectError{Field: field, Value: truncate(value), Reason: reason}
}

// truncate cuts s to maxRejectValue bytes, on a rune boundary when s is
// valid UTF-8.
func truncate(s string) string {
	if len(s) <= maxRejectValue {
		return s
	}
	n := maxRejectValue
	if utf8.ValidString(s) {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
	}
	return s[:n] + "..."
}

// Parse validates an item against the producer contract and returns the
// transaction it bills. Every refusal is a *RejectError naming the first
// bad attribute, checked in this order: transaction_id, agency_id,
// currency, amount, kind, commission_bps, customer_id, product_id,
// recorded_at (or the sort key when recorded_at is absent). Attributes
// outside the contract are ignored.
//
// RecordedAt is recorded_at (any RFC 3339 offset, converted to UTC and
// truncated to the millisecond) or, when absent, the second the sort key
// encodes.
func Parse(it Item) (Transaction, error) {
	vals, present := it.Contract()
	return ParseContract(it.PK, it.SK, &vals, present)
}

// ParseContract is Parse of the item with keys pk and sk whose contract
// attributes are vals and present, as Item.Contract returns them (a caller
// that needs them for something else too walks the item once).
func ParseContract(pk, sk string, vals *[NumContractAttrs]Value, present uint16) (Transaction, error) {
	t := Transaction{PK: pk, SK: sk, Kind: Purchase}
	var err *RejectError
	get := func(name string, typ Type, required bool) (string, bool) {
		if err != nil {
			return "", false
		}
		i := contractIndex(name)
		v, ok := vals[i], present&(1<<i) != 0
		if !ok {
			if required {
				err = reject(name, "", "missing")
			}
			return "", false
		}
		if v.Type != typ {
			err = reject(name, v.Text, fmt.Sprintf("want type %s, got %s", typ, v.Type))
			return "", false
		}
		return v.Text, true
	}
	check := func(name, s string, present bool, check func(string) string) {
		if err != nil || !present {
			return
		}
		if reason := check(s); reason != "" {
			err = reject(name, s, reason)
		}
	}

	t.ID, _ = get(AttrTransactionID, String, true)
	check(AttrTransactionID, t.ID, err == nil, textRule(1, maxTransactionID, unicode.IsControl))
	t.AgencyID, _ = get(AttrAgencyID, String, true)
	check(AttrAgencyID, t.AgencyID, err == nil, textRule(1, maxAgencyID, notPrintable))
	check(AttrAgencyID, t.AgencyID, err == nil, func(s string) string {
		if n := keys.EscapedAgencyLen(s); n > keys.MaxEscapedAgency {
			return fmt.Sprintf("escaped for the report's object key it is %d bytes, over %d: no file or S3 key can hold it",
				n, keys.MaxEscapedAgency)
		}
		return ""
	})

	code, ok := get(AttrCurrency, String, true)
	check(AttrCurrency, code, ok, func(s string) string {
		c, lerr := money.LookupCurrency(s)
		if lerr != nil {
			if up := strings.ToUpper(s); up != s {
				if _, uerr := money.LookupCurrency(up); uerr == nil {
					return fmt.Sprintf("unknown ISO 4217 currency: codes are upper case, write %q", up)
				}
			}
			return "unknown ISO 4217 currency"
		}
		t.Currency = c
		return ""
	})
	amount, ok := get(AttrAmount, Number, true)
	check(AttrAmount, amount, ok, func(s string) string {
		v, perr := money.ParseAmount(s, t.Currency)
		if perr != nil {
			return amountReason(perr)
		}
		if v < 0 {
			return `must be > 0: a refund is a positive amount with kind "refund"`
		}
		if v == 0 {
			return "must be > 0"
		}
		if _, serr := t.Currency.Scale4(v); serr != nil {
			return "too large for the reports' DECIMAL(18,4) (at most 99999999999999.9999)"
		}
		t.Amount = v
		return ""
	})

	kind, ok := get(AttrKind, String, false)
	check(AttrKind, kind, ok, func(s string) string {
		if k := Kind(s); k != Purchase && k != Refund {
			return `want "purchase" or "refund"`
		}
		t.Kind = Kind(s)
		return ""
	})
	bps, ok := get(AttrCommissionBPS, Number, false)
	check(AttrCommissionBPS, bps, ok, func(s string) string {
		v, perr := money.ParseAmount(s, money.Currency{})
		if perr != nil {
			return amountReason(perr)
		}
		if v < 0 || v > maxBPS {
			return "want an integer 0..10000"
		}
		t.BPS, t.HasBPS = int32(v), true
		return ""
	})
	t.CustomerID, ok = get(AttrCustomerID, String, false)
	check(AttrCustomerID, t.CustomerID, ok, textRule(0, maxOptionalID, unicode.IsControl))
	t.ProductID, ok = get(AttrProductID, String, false)
	check(AttrProductID, t.ProductID, ok, textRule(0, maxOptionalID, unicode.IsControl))

	at, ok := get(AttrRecordedAt, String, false)
	check(AttrRecordedAt, at, ok, func(s string) string {
		v, perr := time.Parse(time.RFC3339, s)
		if perr != nil {
			return "want an RFC 3339 time"
		}
		// An offset can push a year-0000 or year-9999 time out of the
		// years RFC 3339 (and the keys) can write once in UTC.
		if y := v.UTC().Year(); y < 0 || y > 9999 {
			return "outside years 0000 to 9999 once converted to UTC"
		}
		t.RecordedAt = v.UTC().Truncate(time.Millisecond)
		return ""
	})
	if err == nil && !ok {
		v, perr := keys.ParseSortKeyTime(sk)
		if perr != nil {
			err = reject(FieldSortKey, sk, "no recorded_at and the sort key encodes no time")
		}
		t.RecordedAt = v
	}
	if err != nil {
		return Transaction{}, err
	}
	return t, nil
}

// textRule returns a check of a string attribute: valid UTF-8, min..max
// characters (runes), and no rune for which bad is true.
func textRule(min, max int, bad func(rune) bool) func(string) string {
	return func(s string) string {
		// Printable ASCII (the usual id) is valid UTF-8, one character a
		// byte, and neither a control nor unprintable: only the length
		// is left to check.
		ascii := printableASCII(s)
		if !ascii && !utf8.ValidString(s) {
			return "not valid UTF-8"
		}
		n := len(s)
		if !ascii {
			n = utf8.RuneCountInString(s)
		}
		if n < min {
			if n == 0 {
				return "empty"
			}
			return fmt.Sprintf("shorter than %d characters", min)
		}
		if n > max {
			return fmt.Sprintf("longer than %d characters", max)
		}
		if ascii {
			return ""
		}
		for _, r := range s {
			if bad(r) {
				return fmt.Sprintf("contains character %U", r)
			}
		}
		return ""
	}
}

// printableASCII reports whether every byte of s is in ' '..'~'.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// notPrintable reports whether r may not appear in an agency_id: anything
// but letters, marks, numbers, punctuation, symbols and the ASCII space
// (unicode.IsPrint), so no control, format (zero-width, bidi), private-use
// or unassigned characters, no newline or tab, no non-ASCII spaces.
func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

func amountReason(err error) string {
	var ae *money.AmountError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return err.Error()
}

// Item returns the canonical item of t, as the ingest writer stores it:
// amount as N in the currency's own digits ("19.99", "1500"),
// commission_bps as N when HasBPS, customer_id and product_id when not
// empty, kind always, recorded_at as RFC 3339 UTC with milliseconds
// ("2006-01-02T15:04:05.000Z"). Parse(t.Item()) returns t.
func (t Transaction) Item() Item {
	attrs := map[string]Value{
		AttrTransactionID: S(t.ID),
		AttrAgencyID:      S(t.AgencyID),
		AttrAmount:        N(t.Currency.Format(t.Amount)),
		AttrCurrency:      S(t.Currency.Code),
		AttrKind:          S(string(t.kind())),
		AttrRecordedAt:    S(t.RecordedAt.UTC().Format(recordedAtLayout)),
	}
	if t.HasBPS {
		attrs[AttrCommissionBPS] = N(strconv.FormatInt(int64(t.BPS), 10))
	}
	if t.CustomerID != "" {
		attrs[AttrCustomerID] = S(t.CustomerID)
	}
	if t.ProductID != "" {
		attrs[AttrProductID] = S(t.ProductID)
	}
	return Item{PK: t.PK, SK: t.SK, Attrs: attrs}
}

func (t Transaction) kind() Kind {
	if t.Kind == "" {
		return Purchase
	}
	return t.Kind
}

// Fingerprint returns the SHA-256 of t's billing content: transaction id,
// agency, customer, product, kind, currency code, amount in minor units
// and the item's own commission_bps if any. The keys and RecordedAt are
// left out: a producer's retry re-stamps its time and may get new keys but
// is the same transaction. Two items with one transaction id and different
// fingerprints are a conflict.
func (t Transaction) Fingerprint() [32]byte {
	// One buffer, one Sum256: the bytes hashed are those of the stream of
	// writes this used to make (so stored fingerprints do not change), and
	// nothing is allocated for the usual sizes.
	var arr [320]byte
	b := appendLenString(arr[:0], "reportjob.transaction.v1")
	b = appendLenString(b, t.ID)
	b = appendLenString(b, t.AgencyID)
	b = appendLenString(b, t.CustomerID)
	b = appendLenString(b, t.ProductID)
	b = appendLenString(b, string(t.kind()))
	b = appendLenString(b, t.Currency.Code)
	b = binary.BigEndian.AppendUint64(b, uint64(t.Amount))
	if t.HasBPS {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(int64(t.BPS)))
	} else {
		b = append(b, 0)
	}
	return sha256.Sum256(b)
}

// appendLenString appends s's length as 8 bytes big-endian, then s.
func appendLenString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

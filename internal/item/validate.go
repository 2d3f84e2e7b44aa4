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
	if err := t.parseContract(vals, present); err != nil {
		return Transaction{}, err
	}
	return t, nil
}

// field returns the text of the contract attribute i of type typ, ok
// false when it is absent; a reject when it is absent but required or has
// another type.
func field(vals *[NumContractAttrs]Value, present uint16, i int, typ Type, required bool) (string, bool, *RejectError) {
	if present&(1<<i) == 0 {
		if required {
			return "", false, reject(ContractAttrs[i], "", "missing")
		}
		return "", false, nil
	}
	v := &vals[i]
	if v.Type != typ {
		return "", false, reject(ContractAttrs[i], v.Text, fmt.Sprintf("want type %s, got %s", typ, v.Type))
	}
	return v.Text, true, nil
}

// parseContract fills t (whose keys are set) from the contract attributes,
// checking them in Parse's order: straight-line code, no closures, and
// nothing allocated for a valid item.
func (t *Transaction) parseContract(vals *[NumContractAttrs]Value, present uint16) *RejectError {
	var (
		s   string
		ok  bool
		err *RejectError
	)
	if t.ID, _, err = field(vals, present, idxTransactionID, String, true); err != nil {
		return err
	}
	if reason := textRule(t.ID, 1, maxTransactionID, unicode.IsControl); reason != "" {
		return reject(AttrTransactionID, t.ID, reason)
	}
	if t.AgencyID, _, err = field(vals, present, idxAgencyID, String, true); err != nil {
		return err
	}
	if reason := AgencyIDProblem(t.AgencyID); reason != "" {
		return reject(AttrAgencyID, t.AgencyID, reason)
	}

	if s, _, err = field(vals, present, idxCurrency, String, true); err != nil {
		return err
	}
	if t.Currency, ok = money.KnownCurrency(s); !ok {
		return reject(AttrCurrency, s, currencyReason(s))
	}
	if s, _, err = field(vals, present, idxAmount, Number, true); err != nil {
		return err
	}
	if reason := t.parseAmount(s); reason != "" {
		return reject(AttrAmount, s, reason)
	}

	if s, ok, err = field(vals, present, idxKind, String, false); err != nil {
		return err
	}
	if ok {
		if k := Kind(s); k != Purchase && k != Refund {
			return reject(AttrKind, s, `want "purchase" or "refund"`)
		}
		t.Kind = Kind(s)
	}
	if s, ok, err = field(vals, present, idxCommissionBPS, Number, false); err != nil {
		return err
	}
	if ok {
		v, perr := money.ParseAmount(s, money.Currency{})
		if perr != nil {
			return reject(AttrCommissionBPS, s, amountReason(perr))
		}
		if v < 0 || v > maxBPS {
			return reject(AttrCommissionBPS, s, "want an integer 0..10000")
		}
		t.BPS, t.HasBPS = int32(v), true
	}
	if t.CustomerID, ok, err = field(vals, present, idxCustomerID, String, false); err != nil {
		return err
	}
	if ok {
		if reason := textRule(t.CustomerID, 0, maxOptionalID, unicode.IsControl); reason != "" {
			return reject(AttrCustomerID, t.CustomerID, reason)
		}
	}
	if t.ProductID, ok, err = field(vals, present, idxProductID, String, false); err != nil {
		return err
	}
	if ok {
		if reason := textRule(t.ProductID, 0, maxOptionalID, unicode.IsControl); reason != "" {
			return reject(AttrProductID, t.ProductID, reason)
		}
	}

	if s, ok, err = field(vals, present, idxRecordedAt, String, false); err != nil {
		return err
	}
	if !ok {
		v, perr := keys.ParseSortKeyTime(t.SK)
		if perr != nil {
			return reject(FieldSortKey, t.SK, "no recorded_at and the sort key encodes no time")
		}
		t.RecordedAt = v
		return nil
	}
	if v, fast := parseRecordedAt(s); fast {
		t.RecordedAt = v
		return nil
	}
	v, perr := time.Parse(time.RFC3339, s)
	if perr != nil {
		return reject(AttrRecordedAt, s, "want an RFC 3339 time")
	}
	// An offset can push a year-0000 or year-9999 time out of the years
	// RFC 3339 (and the keys) can write once in UTC.
	if y := v.UTC().Year(); y < 0 || y > 9999 {
		return reject(AttrRecordedAt, s, "outside years 0000 to 9999 once converted to UTC")
	}
	t.RecordedAt = v.UTC().Truncate(time.Millisecond)
	return nil
}

// currencyReason is the reject reason of a currency code that is not
// money.KnownCurrency.
func currencyReason(s string) string {
	if up := strings.ToUpper(s); up != s {
		if _, ok := money.KnownCurrency(up); ok {
			return fmt.Sprintf("unknown ISO 4217 currency: codes are upper case, write %q", up)
		}
	}
	return "unknown ISO 4217 currency"
}

// parseAmount sets t.Amount from the amount text s in t.Currency, or
// returns why it cannot.
func (t *Transaction) parseAmount(s string) string {
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
}

// parseRecordedAt parses recorded_at in the layout Item writes
// ("2006-01-02T15:04:05.000Z", UTC, milliseconds) without time.Parse:
// ok is false for any other text (even a valid RFC 3339 time), which
// time.Parse then handles. When ok, the time is time.Parse's, in UTC.
func parseRecordedAt(s string) (time.Time, bool) {
	if len(s) != len(recordedAtLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
		s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, false
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec, ms := num(11, 13), num(14, 16), num(17, 19), num(20, 23)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 || ms < 0 {
		return time.Time{}, false
	}
	if day > daysIn(time.Month(month), year) {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ms*int(time.Millisecond), time.UTC), true
}

// daysIn is the number of days of month in year (proleptic Gregorian).
func daysIn(month time.Month, year int) int {
	switch month {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// textRule checks a string attribute s: valid UTF-8, min..max characters
// (runes), and no rune for which bad is true. It returns the reject
// reason, "" when s passes.
func textRule(s string, min, max int, bad func(rune) bool) string {
	// Printable ASCII (the usual id) is valid UTF-8, one character a
	// byte, and neither a control nor unprintable: only the length is
	// left to check.
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

// printableASCII reports whether every byte of s is in ' '..'~'. It
// checks 8 bytes at a time: a word has a byte under 0x20 exactly when
// (x - 0x20...) & ^x has a high bit set, and a byte over 0x7e exactly when
// (x + 0x01...) | x has (the carries and borrows between bytes only ever
// start at a byte that is out of range itself).
func printableASCII(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if ((x-0x20*ones)&^x|(x+ones)|x)&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// AgencyIDProblem returns why id is not an agency_id under the producer
// contract (1 to 128 printable UTF-8 characters, short enough once escaped
// to be a report's object key), or "" when it is one. The config's
// commission.agencies and the statements' agency directory apply it too,
// so that an id they accept is one an item can carry.
func AgencyIDProblem(id string) string {
	if reason := textRule(id, 1, maxAgencyID, notPrintable); reason != "" {
		return reason
	}
	if n := keys.EscapedAgencyLen(id); n > keys.MaxEscapedAgency {
		return fmt.Sprintf("escaped for the report's object key it is %d bytes, over %d: no file or S3 key can hold it",
			n, keys.MaxEscapedAgency)
	}
	return ""
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

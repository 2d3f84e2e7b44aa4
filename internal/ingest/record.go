package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/suggest"
)

// Record is one transaction as a producer sends it, in the JSON Lines form
// ReadJSONL reads (MarshalJSON writes it). Amount is the exact decimal text
// in major units ("19.99", "1500" JPY, "1.500" BHD). Empty strings, a nil
// CommissionBPS and a zero RecordedAt are left out of the JSON.
type Record struct {
	TransactionID string
	AgencyID      string
	Amount        string
	Currency      string
	Kind          string
	CustomerID    string
	ProductID     string
	CommissionBPS *int
	RecordedAt    time.Time
}

// recordJSON is the JSON form of a Record: field names of the producer
// contract, amount as a JSON string (exact), recorded_at RFC 3339 UTC.
type recordJSON struct {
	TransactionID string `json:"transaction_id"`
	AgencyID      string `json:"agency_id"`
	Amount        string `json:"amount"`
	Currency      string `json:"currency"`
	Kind          string `json:"kind,omitempty"`
	CommissionBPS *int   `json:"commission_bps,omitempty"`
	CustomerID    string `json:"customer_id,omitempty"`
	ProductID     string `json:"product_id,omitempty"`
	RecordedAt    string `json:"recorded_at,omitempty"`
}

// MarshalJSON returns r as one JSON object, the JSON Lines form ReadJSONL
// reads back.
func (r Record) MarshalJSON() ([]byte, error) {
	j := recordJSON{
		TransactionID: r.TransactionID,
		AgencyID:      r.AgencyID,
		Amount:        r.Amount,
		Currency:      r.Currency,
		Kind:          r.Kind,
		CommissionBPS: r.CommissionBPS,
		CustomerID:    r.CustomerID,
		ProductID:     r.ProductID,
	}
	if !r.RecordedAt.IsZero() {
		j.RecordedAt = r.RecordedAt.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(j)
}

// attrs returns r's attributes as an item holds them (without keys).
func (r Record) attrs() map[string]item.Value {
	a := map[string]item.Value{
		item.AttrTransactionID: item.S(r.TransactionID),
		item.AttrAgencyID:      item.S(r.AgencyID),
		item.AttrAmount:        item.N(r.Amount),
		item.AttrCurrency:      item.S(r.Currency),
	}
	if r.Kind != "" {
		a[item.AttrKind] = item.S(r.Kind)
	}
	if r.CommissionBPS != nil {
		a[item.AttrCommissionBPS] = item.N(strconv.Itoa(*r.CommissionBPS))
	}
	if r.CustomerID != "" {
		a[item.AttrCustomerID] = item.S(r.CustomerID)
	}
	if r.ProductID != "" {
		a[item.AttrProductID] = item.S(r.ProductID)
	}
	if !r.RecordedAt.IsZero() {
		a[item.AttrRecordedAt] = item.S(r.RecordedAt.UTC().Format(time.RFC3339Nano))
	}
	return a
}

// Errors of a JSON Lines line that is not a record at all. Bad fields are
// *item.RejectError instead.
var (
	// ErrBadJSON: the line is not one JSON object.
	ErrBadJSON = errors.New("bad JSON")
	// ErrLineTooLong: the line is longer than MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
)

// knownFields are the fields a JSON Lines record may have.
var knownFields = map[string]bool{
	item.AttrTransactionID: true,
	item.AttrAgencyID:      true,
	item.AttrAmount:        true,
	item.AttrCurrency:      true,
	item.AttrKind:          true,
	item.AttrCommissionBPS: true,
	item.AttrCustomerID:    true,
	item.AttrProductID:     true,
	item.AttrRecordedAt:    true,
}

// numericFields are the fields whose item type is N: a JSON number or a
// JSON string holding the number's text are both accepted, exactly.
var numericFields = map[string]bool{
	item.AttrAmount:        true,
	item.AttrCommissionBPS: true,
}

// decodeLine decodes one JSON Lines record into item attributes without
// keys, keeping every number's literal text (never through float64).
//
// Mapping: a JSON string is S, except amount and commission_bps, which are
// N with the string's text; a JSON number is N with its literal text; null
// is an absent field; true, false, objects and arrays are item.Other with
// their JSON text (so validation names them). An unknown field, a field
// given twice, invalid UTF-8 and anything but exactly one JSON object are
// errors.
func decodeLine(line []byte) (map[string]item.Value, error) {
	if !utf8.Valid(line) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrBadJSON)
	}
	if attrs, ok := decodePlainLine(line); ok {
		return attrs, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%w: want an object, got %s", ErrBadJSON, te.Value)
		}
		return nil, fmt.Errorf("%w: %v", ErrBadJSON, err)
	}
	if fields == nil {
		return nil, fmt.Errorf("%w: want an object, got null", ErrBadJSON)
	}
	// The first unknown or repeated field, in line order.
	names := memberNames(line)
	for i, name := range names {
		if !knownFields[name] {
			return nil, &item.RejectError{Field: name, Value: string(fields[name]), Reason: "unknown field" + suggestField(name)}
		}
		if slices.Contains(names[:i], name) {
			return nil, &item.RejectError{Field: name, Value: string(fields[name]),
				Reason: "field given twice (the value shown is the last)"}
		}
	}
	attrs := make(map[string]item.Value, len(fields))
	for name, raw := range fields {
		if v, present := jsonValue(raw, numericFields[name]); present {
			attrs[name] = v
		}
	}
	return attrs, nil
}

// memberNames returns the member names of the top-level object of line,
// in order, repeats included. line must be a valid JSON object.
func memberNames(line []byte) []string {
	names := make([]string, 0, len(knownFields))
	depth, inString, escaped, expectKey, keyStart := 0, false, false, false, -1
	for i, c := range line {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if keyStart >= 0 {
					names = append(names, jsonString(line[keyStart:i+1]))
					keyStart = -1
				}
			}
		case c == '"':
			inString = true
			if depth == 1 && expectKey {
				keyStart, expectKey = i, false
			}
		case c == '{' || c == '[':
			depth++
			expectKey = depth == 1 && c == '{'
		case c == '}' || c == ']':
			depth--
		case c == ',' && depth == 1:
			expectKey = true
		}
	}
	return names
}

// jsonValue maps one JSON value to an item value (see decodeLine).
func jsonValue(raw json.RawMessage, numeric bool) (v item.Value, present bool) {
	switch raw[0] {
	case 'n':
		return item.Value{}, false
	case '"':
		s := jsonString(raw)
		if numeric {
			return item.N(s), true
		}
		return item.S(s), true
	case 't', 'f', '{', '[':
		return item.Value{Type: item.Other, Text: string(raw)}, true
	default: // a number: its literal text, exactly as written
		return item.N(string(raw)), true
	}
}

// jsonString returns the value of raw, a valid JSON string of valid UTF-8.
func jsonString(raw []byte) string {
	if !slices.Contains(raw, '\\') {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid: json.Unmarshal of the line checked it
	return s
}

// recordedAt returns the instant attrs' recorded_at names, or ok false when
// there is none. A recorded_at that is not an RFC 3339 string is a
// *item.RejectError.
func recordedAt(attrs map[string]item.Value) (t time.Time, ok bool, err error) {
	v, ok := attrs[item.AttrRecordedAt]
	if !ok {
		return time.Time{}, false, nil
	}
	if v.Type != item.String {
		return time.Time{}, false, &item.RejectError{Field: item.AttrRecordedAt, Value: v.Text,
			Reason: "want an RFC 3339 time string"}
	}
	t, err = time.Parse(time.RFC3339, v.Text)
	if err != nil {
		return time.Time{}, false, &item.RejectError{Field: item.AttrRecordedAt, Value: v.Text,
			Reason: "want an RFC 3339 time"}
	}
	return t.UTC(), true, nil
}

// transaction computes the keys of a record recorded at at (derived from
// its transaction id, so a retry is the same item) and validates the item
// with the report's own rules.
func transaction(attrs map[string]item.Value, at time.Time, shards int) (item.Transaction, error) {
	id := attrs[item.AttrTransactionID].Text
	if _, ok := attrs[item.AttrRecordedAt]; !ok {
		attrs[item.AttrRecordedAt] = item.S(at.UTC().Format(time.RFC3339Nano))
	}
	pk, sk := keys.ForTransaction(id, at, shards)
	return item.Parse(item.Item{PK: pk, SK: sk, Attrs: attrs})
}

// suggestField returns "; did you mean F?" for the known field closest to
// name (at most 2 edits apart, ignoring case; of equals, the first in
// sorted order), or "".
func suggestField(name string) string {
	return suggest.Hint(name, sortedFields)
}

// sortedFields are knownFields' names, sorted.
var sortedFields = slices.Sorted(maps.Keys(knownFields))

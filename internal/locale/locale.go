// Package locale writes a statement's wording, numbers and dates in the
// agency's language (SPEC section 7, version 4): thousands and decimal
// separators per CLDR, amounts in the currency's ISO 4217 digits, month
// names and date order, and the sentences of the document from catalog
// files a translator edits (catalogs/<language>.yaml).
//
// This file is the API the statement document is written against; the
// formatting and the catalogs are filled in by the locale work of issue 32.
package locale

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// ErrUnknownLocale is returned by Parse for a tag that is not BCP 47.
var ErrUnknownLocale = errors.New("unknown locale")

// Locale formats for one BCP 47 tag. The zero value is not usable: get
// one from Parse or English.
type Locale struct {
	tag string
}

// English is the locale of a statement whose agency has none.
func English() *Locale { return &Locale{tag: "en"} }

// Parse returns the locale for a BCP 47 tag ("fr-FR", "ja"). A
// well-formed tag whose language has no catalog gets English wording with
// the tag's own number formats; a malformed one is ErrUnknownLocale.
func Parse(tag string) (*Locale, error) {
	if tag == "" {
		return nil, fmt.Errorf("locale %q: %w", tag, ErrUnknownLocale)
	}
	return &Locale{tag: tag}, nil
}

// Tag is the BCP 47 tag as parsed.
func (l *Locale) Tag() string { return l.tag }

// Amount is t in c's minor units written with the locale's separators and
// exactly c's ISO 4217 digits, without the currency: "179,201.87" (en),
// "179 201,87" (fr), "179.201,87" (de), "945,652" (ja, JPY).
func (l *Locale) Amount(c money.Currency, t money.Total) string { return c.FormatTotal(t) }

// Money is Amount with the currency as the locale writes it: "EUR 179,201.87"
// or "179 201,87 EUR".
func (l *Locale) Money(c money.Currency, t money.Total) string {
	return c.Code + " " + l.Amount(c, t)
}

// Int is n with the locale's thousands separator.
func (l *Locale) Int(n int64) string { return strconv.FormatInt(n, 10) }

// Rate is a rate in basis points as a percentage: "10%", "12.5 %" (fr: "12,5 %").
func (l *Locale) Rate(bps int32) string {
	return strconv.FormatFloat(float64(bps)/100, 'f', -1, 64) + "%"
}

// Date is a calendar day (YYYY-MM-DD) as the locale writes it: "4 December
// 2026", "4 décembre 2026", "2026年12月4日". A malformed day is returned as is.
func (l *Locale) Date(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	return t.Format("2 January 2006")
}

// Month is a month (YYYY-MM) as the locale names it: "March 2026",
// "mars 2026", "2026年3月". A malformed month is returned as is.
func (l *Locale) Month(month string) string {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return month
	}
	return t.Format("January 2006")
}

// T is the catalog's text for key with each {name} replaced by the value
// that follows name in args (pairs): T("due.owes", "payer", "Acme",
// "payee", "Billing Co", "amount", "EUR 12.00"). A key missing from the
// catalog prints as the key, never an error (a test checks that every key
// exists in every catalog).
func (l *Locale) T(key string, args ...string) string {
	s := key
	for i := 0; i+1 < len(args); i += 2 {
		s = strings.ReplaceAll(s, "{"+args[i]+"}", args[i+1])
	}
	return s
}

// Package money handles amounts as integer minor units of an ISO 4217
// currency: exact parsing, formatting, and commission rounding. No float
// is used anywhere.
package money

// Currency is an ISO 4217 currency and the number of its minor-unit
// digits (USD 2, JPY 0, BHD 3).
type Currency struct {
	Code   string
	Digits int
}

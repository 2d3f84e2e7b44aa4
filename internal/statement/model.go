// Package statement builds the monthly statements (the close): one
// statement per agency per calendar month of statements.timezone, draft
// until the month's close, then final and never changed again. A
// restatement of a period whose month is final is booked as a prior-period
// adjustment in the next month that is not final. Statements are built
// from the delivered record only (period manifests and summaries), through
// the same sink as the periods.
package statement

import (
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// Status is a statement's state: draft until the month closes, then final.
type Status string

// Statuses.
const (
	Draft Status = "draft"
	Final Status = "final"
)

// Totals are counts and amounts in minor units of one currency. Net is
// Gross - Refunds; Commission is the sum of the line commissions (refunds
// negative). In an Adjustment they are differences.
type Totals struct {
	PurchaseCount, RefundCount int64
	Gross, Refunds, Net        money.Total
	Commission                 money.Total
}

// Agency is one agency's statement of a month: everything its files
// (statement-H.csv, .pdf, .parquet) show. Slices are sorted as documented
// so that the same statement always renders to the same bytes.
type Agency struct {
	Job      string
	AgencyID string // the original id, any script
	Month    string // YYYY-MM in Zone
	Zone     string // IANA name of statements.timezone, e.g. "Europe/Paris" or "UTC"
	Status   Status
	Revision int // the month's statement_revision in which this statement last changed (1, 2, ...)
	// ClosesAt is when (RFC 3339, UTC) a draft becomes final at the latest
	// (month end + statements.close_after); empty for a final statement.
	ClosesAt string
	// Lines is one line per currency, sorted by currency code.
	Lines []Line
	// Days is the month's own periods per day (in Zone) and currency,
	// only days with activity, sorted by date then currency.
	Days []Day
	// Adjustments are the prior-period adjustments booked in this month,
	// sorted by period start then currency.
	Adjustments []Adjustment
	// Periods are the month's periods this statement covers, ascending:
	// the audit chain from a statement line down to the period files.
	Periods []PeriodRef
	// Doc is what makes the statement a document an accountant files
	// (version 4): number, who bills whom, dates, terms, locale. A
	// statement rendered without one (zero Doc) prints as before v4.
	Doc Document
	// Rates are the commission applied per rate: one line per currency,
	// rate and run of days at that rate, sorted by currency then From.
	Rates []RateLine
	// LegacyChain is set for a statement published before the audit chain
	// named each period by its content digest: its files name each period
	// revision by its manifest's sha256 (PeriodRef.ManifestSHA256) and its
	// adjustment lines by none. Only a statement re-rendered from such a
	// month's own record (verify, a restore) has it: the same bytes again.
	LegacyChain bool
}

// Line is an agency's month in one currency.
type Line struct {
	Currency money.Currency
	Totals   // the month's own periods
	// PriorPeriodAdjustments is the commission of the adjustments booked
	// in this month; CommissionDue = Commission + PriorPeriodAdjustments.
	PriorPeriodAdjustments money.Total
	CommissionDue          money.Total
}

// Day is one day (in the statement's zone) in one currency.
type Day struct {
	Date     string // YYYY-MM-DD
	Currency money.Currency
	Totals
}

// Adjustment is a prior-period adjustment: what a restatement of a period
// of a final month changed, booked in a later month, per currency.
type Adjustment struct {
	Period report.Period
	Month  string // the period's own month, YYYY-MM
	// FromRevision is the revision earlier statements billed; ToRevision
	// the one this adjustment brings it to.
	FromRevision, ToRevision int
	Reason                   string // the ToRevision manifest's reason: recheck, backfill, verify --repair
	// Digest is report.ContentDigest of revision ToRevision: the audit
	// chain of the adjustment line ("" in a LegacyChain statement).
	Digest   string
	Currency money.Currency
	Totals   // differences ToRevision - FromRevision, negative when it takes away
}

// PeriodRef names one period revision a statement covers.
type PeriodRef struct {
	Period      report.Period
	Revision    int
	ManifestKey string // manifests/period=P/manifest.json
	// Digest is report.ContentDigest of that revision: what the period
	// holds (its objects' sha256 and items fingerprint), not when its
	// manifest was written. What the statement's files print.
	Digest string
	// ManifestSHA256 is the sha256 of that manifest's bytes: what a
	// LegacyChain statement prints instead of the digest.
	ManifestSHA256 string
}

// Document is what SPEC section 7 (version 4) adds to a statement: the
// parties, the statement number, the dates and terms, and the locale it is
// written in. Every field is a function of the record and the config the
// close read (the directory, statements.issuer), never of the clock, so
// that the same content renders to the same bytes.
type Document struct {
	// Number is unique per issuer and stable across a month's draft
	// revisions (docs/statements.md, Statement numbers).
	Number string
	// Issuer is statements.issuer; Recipient the agency's directory entry.
	// A Recipient the directory lacks has the agency id as LegalName and
	// Listed false.
	Issuer, Recipient Party
	Listed            bool
	// Locale is the BCP 47 tag the document's wording, numbers and dates
	// follow ("en" when the directory gives none).
	Locale string
	// IssueDate is YYYY-MM-DD in the statement's zone: for a final, the
	// day of its close; for a draft, "as of" the last day its periods
	// reach. DueDate is IssueDate + PaymentTermsDays.
	IssueDate, DueDate string
	PaymentTermsDays   int
	// PaymentInstructions is the issuer's free text (bank, the reference
	// to quote).
	PaymentInstructions string
	// Logo is the issuer's PNG, or nil.
	Logo []byte
}

// Party is who issues or receives a statement.
type Party struct {
	LegalName string
	Address   []string // lines
	Country   string   // ISO 3166-1 alpha-2, may be empty
	TaxID     string
	Contact   string   // e-mail or phone (the issuer's)
	Emails    []string // billing addresses (the recipient's)
}

// RateLine is the commission applied at one rate in one currency over a
// run of the month's days: Base is the net amount priced at BPS and
// Commission what it earned (the sum of the line commissions, so not
// necessarily Base*BPS/10000 to the unit).
//
// BPS is UnknownBPS (-1) for the periods whose manifests record no rate
// table (delivered before rates were recorded): the renderer prints the
// rate as unknown. How lines are made: rates.go.
type RateLine struct {
	Currency   money.Currency
	BPS        int32
	From, To   string // first and last day (YYYY-MM-DD in the statement's zone) at this rate
	Base       money.Total
	Commission money.Total
}

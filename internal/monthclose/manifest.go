package monthclose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// Format identifies the month manifest layout.
const Format = "reportjob.statements/1"

// Reasons a statement revision was published (Manifest.Reason).
const (
	ReasonUpdate     = "update"            // its periods or adjustments changed
	ReasonClose      = "close"             // the close time passed: final
	ReasonCloseEarly = "statement --close" // finalised early on request
)

// Manifest is manifests/month=M/manifest.json: the commit record of month
// M's statements. It is written last, replaced only by a conditional
// write of the next statement revision, and never once Status is final.
type Manifest struct {
	Format   string `json:"format"`
	Job      string `json:"job"`
	Month    string `json:"month"`
	Timezone string `json:"timezone"`
	// MonthStart and MonthEnd are the month's bounds, RFC 3339 UTC.
	MonthStart time.Time `json:"month_start"`
	MonthEnd   time.Time `json:"month_end"`
	Status     string    `json:"status"`
	// StatementRevision is 1 for the first publication, n+1 for each
	// change.
	StatementRevision int    `json:"statement_revision"`
	Reason            string `json:"reason"`
	// ClosesAt is when a draft becomes final at the latest (month end +
	// statements.close_after, once the month's rechecks are done).
	ClosesAt       time.Time `json:"closes_at"`
	PreviousSHA256 string    `json:"previous_sha256,omitempty"`
	GeneratedAt    time.Time `json:"generated_at"`
	ToolVersion    string    `json:"tool_version"`
	// AgencyFiles are the per-agency statement files written
	// (statements.agency_files): a change rebuilds the month's files.
	AgencyFiles []string `json:"agency_files"`
	// Periods are the period revisions the statements were built from,
	// ascending: the audit chain down to the period files.
	Periods []PeriodEntry `json:"periods"`
	// Agencies are the agencies' statements in this revision, by agency
	// id: the statement revision each one last changed in (what its files
	// print) and the digest of its content (agencies.go).
	Agencies []AgencyEntry `json:"agencies,omitempty"`
	// Document is what the statements' documents share (the issuer, its
	// terms and instructions, the issue date of a final): absent from a
	// month published before statements were documents (no numbers, no
	// rate lines: its statements are re-made as they were). document.go.
	Document *DocumentRecord `json:"document,omitempty"`
	// RetiredNumbers are the statement numbers of agencies that had a
	// statement in an earlier revision of the month and have none in this
	// one: kept so that a number is never given to another agency
	// (numbers.go).
	RetiredNumbers []AgencyNumber `json:"retired_numbers,omitempty"`
	// Adjustments are the prior-period adjustments booked in this month.
	Adjustments []AdjustmentEntry `json:"adjustments"`
	// Totals per currency over every agency.
	Totals []Total `json:"totals"`
	// Files is every object of this revision but the manifest, by key.
	Files []report.FileInfo `json:"files"`
	// ReplacedFiles are the keys the previous revision listed and this one
	// does not (deleted once this manifest is published).
	ReplacedFiles []string `json:"replaced_files,omitempty"`
	// Parts, in layout FormatParts, are the part objects that hold the
	// agencies' files, the replaced keys and the agency entries
	// (manifestparts.go); readManifest puts them back into the lists.
	Parts []Part `json:"parts,omitempty"`

	// recipient, when set, gives the Recipient of a Listed entry that has
	// none in memory: a close of many agencies keeps their recipients in
	// the directory, not in Agencies (stream.go). What is written is the
	// same.
	recipient func(agencyID string) *PartyRecord
}

// PeriodEntry names one period revision: by Digest, the
// report.ContentDigest of what it holds; a month manifest written before
// digests (a legacy audit chain) names it by SHA256, its manifest's bytes.
type PeriodEntry struct {
	Key      string    `json:"key"`
	Start    time.Time `json:"period_start"`
	End      time.Time `json:"period_end"`
	Revision int       `json:"revision"`
	SHA256   string    `json:"sha256,omitempty"`
	Digest   string    `json:"digest,omitempty"`
}

// Is reports whether the period manifest cur (with its bytes raw) is the
// revision e names: its digest (or, in a legacy entry, its bytes' sha256).
func (e PeriodEntry) Is(cur *report.Manifest, raw []byte) bool {
	if cur == nil || cur.Revision != e.Revision {
		return false
	}
	if e.Digest != "" {
		return report.ContentDigest(cur) == e.Digest
	}
	return report.SHA256Hex(raw) == e.SHA256
}

// AgencyEntry is one agency's statement in a month revision.
type AgencyEntry struct {
	AgencyID string `json:"agency_id"`
	// Revision is the statement revision in which this agency's statement
	// last changed: its files print it, and are the ones that revision
	// published.
	Revision int    `json:"statement_revision"`
	Digest   string `json:"digest"`
	// Number is the agency's statement number in this month, kept by every
	// later revision (numbers.go); "" in a month published before numbers.
	Number string `json:"statement_number,omitempty"`
	// Listed, Locale, PaymentTermsDays and Recipient are the agency's
	// document as the close made it (document.go): Recipient is its
	// directory entry, absent when it was not listed (its id is then its
	// name).
	Listed           bool         `json:"listed,omitempty"`
	Locale           string       `json:"locale,omitempty"`
	PaymentTermsDays int          `json:"payment_terms_days,omitempty"`
	Recipient        *PartyRecord `json:"recipient,omitempty"`
}

// AgencyNumber is an agency's statement number.
type AgencyNumber struct {
	AgencyID string `json:"agency_id"`
	Number   string `json:"statement_number"`
}

// AdjustmentEntry is one prior-period adjustment booked in the month: the
// restatement of Period (of month PeriodMonth, final) from FromRevision to
// ToRevision. Its rows are in the month's adjustments file.
type AdjustmentEntry struct {
	PeriodStart  time.Time `json:"period_start"`
	PeriodEnd    time.Time `json:"period_end"`
	PeriodMonth  string    `json:"period_month"`
	FromRevision int       `json:"from_revision"`
	ToRevision   int       `json:"to_revision"`
	Reason       string    `json:"reason"`
	// Key and SHA256 name the period manifest of ToRevision, Digest its
	// report.ContentDigest (absent in a month manifest written before
	// digests).
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Digest string `json:"digest,omitempty"`
	// Commission is the difference per currency, exact decimal strings.
	Commission []CurrencyAmount `json:"commission"`
}

// CurrencyAmount is an exact decimal amount in a currency's digits.
type CurrencyAmount struct {
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
}

// Total is one currency's totals over every agency of the month.
type Total struct {
	Currency               string `json:"currency"`
	Agencies               int64  `json:"agencies"`
	PurchaseCount          int64  `json:"purchase_count"`
	RefundCount            int64  `json:"refund_count"`
	Gross                  string `json:"gross_amount"`
	Refunds                string `json:"refund_amount"`
	Net                    string `json:"net_amount"`
	Commission             string `json:"commission_amount"`
	PriorPeriodAdjustments string `json:"prior_period_adjustments"`
	CommissionDue          string `json:"commission_due"`
}

// LegacyChain reports whether m was written before the audit chain named
// each period revision by its content digest: its statements print the
// period manifests' sha256 instead (statement.Agency.LegacyChain). An
// adjustment booked before digests and carried into a later revision may
// still have none (carryAdjustments adds it when it can): that alone is
// no legacy chain.
func (m *Manifest) LegacyChain() bool {
	for _, p := range m.Periods {
		if p.Digest == "" {
			return true
		}
	}
	if len(m.Periods) == 0 {
		for _, a := range m.Adjustments {
			if a.Digest == "" {
				return true
			}
		}
	}
	return false
}

// lighten drops from m's agency entries what a close does not read of
// the published revision (their recipient, locale, terms and listing: the
// digest covers them), to hold a month of many agencies in less memory.
// A lightened manifest is never written or compared as a whole.
func (m *Manifest) lighten() {
	for i := range m.Agencies {
		e := &m.Agencies[i]
		e.Listed, e.Locale, e.PaymentTermsDays, e.Recipient = false, "", 0, nil
	}
}

// release drops from m, the published revision a close is replacing, what
// the publication of the next one no longer reads once its statements are
// recorded (built): its agency entries and the digests of its files but
// those in kept (by agency folder: published again as they are), so that
// a month of many agencies is not held twice while it is rendered and
// uploaded. Only the keys of m's files are read after (publish, cleanup).
func (m *Manifest) release(kept map[string][]report.FileInfo) {
	m.Agencies, m.RetiredNumbers = nil, nil
	for i := range m.Files {
		f := &m.Files[i]
		if j := strings.LastIndexByte(f.Key, '/'); j >= 0 {
			if _, ok := kept[f.Key[:j+1]]; ok {
				continue
			}
		}
		f.SHA256 = ""
	}
}

// Final reports whether m is a final statement.
func (m *Manifest) Final() bool { return m.Status == string(statement.Final) }

// withRecipients returns es with every Listed entry's Recipient (a copy
// when m.recipient fills one in).
func (m *Manifest) withRecipients(es []AgencyEntry) []AgencyEntry {
	if m.recipient == nil {
		return es
	}
	out := slices.Clone(es)
	for i := range out {
		if e := &out[i]; e.Listed && e.Recipient == nil {
			e.Recipient = m.recipient(e.AgencyID)
		}
	}
	return out
}

// Marshal returns manifest.json's bytes: indented JSON and a newline.
func (m *Manifest) Marshal() ([]byte, error) {
	c := *m
	c.Agencies = m.withRecipients(c.Agencies)
	for _, l := range []*[]report.FileInfo{&c.Files} {
		if *l == nil {
			*l = []report.FileInfo{}
		}
	}
	if c.Periods == nil {
		c.Periods = []PeriodEntry{}
	}
	if c.AgencyFiles == nil {
		c.AgencyFiles = []string{}
	}
	if c.Adjustments == nil {
		c.Adjustments = []AdjustmentEntry{}
	}
	if c.Totals == nil {
		c.Totals = []Total{}
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal month manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseManifest decodes a month manifest and checks its format.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		return nil, fmt.Errorf("parse month manifest: %w", err)
	}
	switch {
	case m.Format == Format && len(m.Parts) == 0:
	case m.Format == FormatParts && len(m.Parts) > 0:
	case m.Format == Format || m.Format == FormatParts:
		return nil, fmt.Errorf("parse month manifest: format %q with %d parts", m.Format, len(m.Parts))
	default:
		return nil, fmt.Errorf("parse month manifest: format %q, want %q or %q", m.Format, Format, FormatParts)
	}
	if m.StatementRevision < 1 {
		return nil, fmt.Errorf("parse month manifest: statement_revision %d, want >= 1", m.StatementRevision)
	}
	if m.Status != string(statement.Draft) && m.Status != string(statement.Final) {
		return nil, fmt.Errorf("parse month manifest: status %q, want draft or final", m.Status)
	}
	return &m, nil
}

// SameContent reports whether m and o publish the same statements: the
// same status, periods, adjustments, totals and objects. Revision, reason,
// previous hash, generation time, tool version and replaced files are not
// compared.
func (m *Manifest) SameContent(o *Manifest) bool {
	a, errA := m.content()
	b, errB := o.content()
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

func (m *Manifest) content() ([]byte, error) {
	c := *m
	c.StatementRevision, c.Reason, c.PreviousSHA256, c.GeneratedAt, c.ToolVersion, c.ReplacedFiles = 1, "", "", time.Time{}, "", nil
	c.Format, c.Parts = Format, nil // the layout is not content
	return c.Marshal()
}

// Booked returns the revision of period start that m accounts for: the
// revision its statements were built from, or the latest an adjustment
// booked in it leads to; 0 when m accounts for none.
func (m *Manifest) Booked(start time.Time) int {
	r := 0
	for _, p := range m.Periods {
		if p.Start.Equal(start) {
			r = max(r, p.Revision)
		}
	}
	for _, a := range m.Adjustments {
		if a.PeriodStart.Equal(start) {
			r = max(r, a.ToRevision)
		}
	}
	return r
}

package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/pricing"
)

// ManifestFormat identifies the manifest layout; it changes only with an
// incompatible change.
const ManifestFormat = "reportjob.manifest/2"

// Reasons a revision was published (Manifest.Reason).
const (
	ReasonDelivery = "delivery"        // the period became due
	ReasonRecheck  = "recheck"         // a recheck found its items changed
	ReasonRepair   = "verify --repair" // verify found a difference and repaired it
	ReasonBackfill = "backfill"        // run --backfill rebuilt it
	// ReasonReprice: verify --repair --reprice priced it with today's
	// rates on purpose.
	ReasonReprice = "verify --repair --reprice"
)

// Manifest is a period's manifests/period=P/manifest.json: the commit
// record of its delivery. A period is delivered when its manifest is; the
// manifest lists every object of the current revision, none of which ever
// changes. It is the only object that is replaced (by the next revision),
// and only by a conditional write.
type Manifest struct {
	Format      string    `json:"format"`
	Job         string    `json:"job"`
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	// Revision is 1 for the first publication, n+1 for a restatement of n.
	Revision int `json:"revision"`
	// Reason says why this revision was published (Reason* constants).
	Reason string `json:"reason"`
	// PreviousSHA256 is the SHA-256 of the manifest this one replaced,
	// and PreviousItemsRead its items_read.
	PreviousSHA256    string    `json:"previous_sha256,omitempty"`
	PreviousItemsRead int64     `json:"previous_items_read,omitempty"`
	GeneratedAt       time.Time `json:"generated_at"`
	ToolVersion       string    `json:"tool_version"`
	Sink              string    `json:"sink,omitempty"`
	// Partitions are the partition keys read, in reading order.
	Partitions []string `json:"partitions"`
	// ItemsRead is the number of items the Queries returned.
	ItemsRead int64 `json:"items_read"`
	// ItemsFingerprint is an order-independent fingerprint of those items
	// (keys and contract attributes): see collect.Fingerprint.
	ItemsFingerprint string `json:"items_fingerprint"`
	// ItemsFingerprintVersion is how ItemsFingerprint hashes each item
	// (see ItemsFingerprint); 0, absent, in manifests written before
	// versions were recorded, which are version 1 (read it with
	// FingerprintVersion).
	ItemsFingerprintVersion ItemsFingerprint `json:"items_fingerprint_version,omitempty"`
	// Transactions billed.
	Transactions int64 `json:"transactions"`
	// DuplicatesWithinPeriod are identical copies of a transaction billed
	// once in this period; DuplicatesAcrossPeriods are identical copies of
	// a transaction another period billed (the dedupe window).
	DuplicatesWithinPeriod  int64 `json:"duplicates_within_period"`
	DuplicatesAcrossPeriods int64 `json:"duplicates_across_periods"`
	// Rejects are the lines of the rejects file.
	Rejects int64 `json:"rejects"`
	// CrossPeriodDecisions is true when this revision records its
	// decisions about the copies of transactions other periods billed
	// (dropped, rejected) in its duplicates object, listed in Files when
	// there are any: a rebuild keeps them (see RecordDecisions). False,
	// absent, in revisions delivered before they were recorded.
	CrossPeriodDecisions bool `json:"cross_period_decisions,omitempty"`
	// Totals per currency over every agency.
	Totals []CurrencyTotal `json:"totals"`
	// Rates is the commission rate table this revision priced its
	// transactions with: the one the period was first billed with, kept by
	// every later revision unless re-priced on purpose (pricing.ForPeriod).
	// Absent from manifests written before rates were recorded.
	Rates *pricing.Table `json:"rates,omitempty"`
	// ParquetLayout is how this revision's Parquet files are encoded
	// (see ParquetLayout); 0, absent, in manifests written before layouts
	// were recorded, which are layout 1 (read it with Layout).
	ParquetLayout ParquetLayout `json:"parquet_layout,omitempty"`
	// Files is every object of this revision but the manifest, by key.
	// In manifest.json of layout ManifestFormatParts it holds the dataset
	// objects only; ReadManifest adds those of the Parts.
	Files []FileInfo `json:"files"`
	// Parts are the part objects that hold the rest of Files and of
	// ReplacedFiles, for a manifest too big to be one object (see
	// ReadManifest); none in layout ManifestFormat.
	Parts []ManifestPart `json:"parts,omitempty"`
	// ReplacedFiles are the keys the previous revision listed and this one
	// does not: deleted once this manifest was published.
	ReplacedFiles []string `json:"replaced_files,omitempty"`
}

// CurrencyTotal is one currency's totals over every agency of a period.
// Amounts are exact decimal strings in the currency's own digits.
type CurrencyTotal struct {
	Currency      string `json:"currency"`
	Agencies      int64  `json:"agencies"`
	PurchaseCount int64  `json:"purchase_count"`
	RefundCount   int64  `json:"refund_count"`
	Gross         string `json:"gross_amount"`
	Refunds       string `json:"refund_amount"`
	Net           string `json:"net_amount"`
	Commission    string `json:"commission_amount"`
}

// FileInfo describes one object. Key is relative to the sink URL.
type FileInfo struct {
	Key    string `json:"key"`
	Bytes  int64  `json:"bytes"`
	Rows   int64  `json:"rows"`
	SHA256 string `json:"sha256"`
}

// Marshal returns manifest.json's bytes (see Encode, which also returns
// the parts a big manifest needs): indented JSON and a newline. The same
// manifest always gives the same bytes.
func (m *Manifest) Marshal() ([]byte, error) {
	body, _, err := m.Encode()
	return body, err
}

// marshal returns m's JSON with files and replaced as its lists.
func (m *Manifest) marshal(files []FileInfo, replaced []string) ([]byte, error) {
	c := *m
	c.Files, c.ReplacedFiles = files, replaced
	if c.Files == nil {
		c.Files = []FileInfo{} // [] rather than null for an empty period
	}
	if c.Totals == nil {
		c.Totals = []CurrencyTotal{}
	}
	if c.Partitions == nil {
		c.Partitions = []string{}
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseManifest decodes manifest.json alone and checks that it is one this
// tool understands. A manifest with Parts lists only its dataset objects in
// Files: read a published manifest with ReadManifest.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	switch {
	case m.Format == ManifestFormat && len(m.Parts) == 0:
	case m.Format == ManifestFormatParts && len(m.Parts) > 0:
	case m.Format == ManifestFormat || m.Format == ManifestFormatParts:
		return nil, fmt.Errorf("parse manifest: format %q with %d parts", m.Format, len(m.Parts))
	default:
		return nil, fmt.Errorf("parse manifest: format %q, want %q or %q", m.Format, ManifestFormat, ManifestFormatParts)
	}
	if m.Revision < 1 {
		return nil, fmt.Errorf("parse manifest: revision %d, want >= 1", m.Revision)
	}
	if err := m.checkLayout(); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	if err := m.checkFingerprintVersion(); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	return &m, nil
}

// SHA256Hex is the hex SHA-256 of b (of a manifest's bytes, for
// PreviousSHA256).
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Period returns the manifest's period.
func (m *Manifest) Period() Period { return Period{Start: m.PeriodStart.UTC(), End: m.PeriodEnd.UTC()} }

// Keys returns the keys of m's files, sorted.
func (m *Manifest) Keys() []string {
	out := make([]string, len(m.Files))
	for i, f := range m.Files {
		out[i] = f.Key
	}
	slices.Sort(out)
	return out
}

// SameContent reports whether m and o record the same delivery: the same
// items (fingerprint and its version), counts, totals, Parquet layout and
// objects. Revision, reason, previous hash,
// generation time, tool version, rates and replaced files are not
// compared, nor
// the partitions read: items are compared by content (the fingerprint), so
// a change of keys.shards alone is no new delivery.
func (m *Manifest) SameContent(o *Manifest) bool {
	return m.Job == o.Job && m.PeriodStart.Equal(o.PeriodStart) && m.PeriodEnd.Equal(o.PeriodEnd) &&
		m.ItemsRead == o.ItemsRead &&
		m.ItemsFingerprint == o.ItemsFingerprint && m.FingerprintVersion() == o.FingerprintVersion() &&
		m.SameBilling(o) && m.Layout() == o.Layout() &&
		slices.Equal(m.Files, o.Files)
}

// SameBilling reports whether m and o decided the same about their items:
// as many transactions billed, copies dropped and rejects, and the same
// totals per currency (commission included).
func (m *Manifest) SameBilling(o *Manifest) bool {
	return m.Transactions == o.Transactions &&
		m.DuplicatesWithinPeriod == o.DuplicatesWithinPeriod && m.DuplicatesAcrossPeriods == o.DuplicatesAcrossPeriods &&
		m.Rejects == o.Rejects && slices.Equal(m.Totals, o.Totals)
}

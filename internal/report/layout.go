package report

import (
	"encoding/hex"
	"strings"

	"github.com/reportjob/reportjob/internal/keys"
)

// Datasets: each has a prefix of its own, so that a query-engine table
// points at exactly one of them.
const (
	// DatasetSummary holds summary/period=P/summary-H.parquet: every agency
	// of the period, one row per (agency, currency).
	DatasetSummary = "summary"
	// DatasetTransactions holds transactions/period=P/transactions-H.parquet:
	// the period's line items, when report.line_items.
	DatasetTransactions = "transactions"
	// DatasetAdjustments holds adjustments/period=P/adjustments-H.parquet: what
	// the latest revision of a restated period changed.
	DatasetAdjustments = "adjustments"
	// DatasetRejects holds rejects/period=P/rejects-H.jsonl.
	DatasetRejects = "rejects"
	// DatasetDuplicates holds duplicates/period=P/duplicates-H.jsonl: the
	// copies the period dropped or rejected because another period billed
	// the transaction (collect.CrossPeriod lines), when there are any, in a
	// revision that records them (Manifest.CrossPeriodDecisions).
	DatasetDuplicates = "duplicates"
	// DirAgencies holds agencies/agency=A/period=P/: what is handed to agency A.
	DirAgencies = "agencies"
	// DirManifests holds manifests/period=P/manifest.json, the commit record.
	DirManifests = "manifests"
)

// Datasets lists the dataset folders, in the order a period's objects are
// listed and cleaned.
var Datasets = []string{DatasetSummary, DatasetTransactions, DatasetAdjustments, DatasetRejects, DatasetDuplicates}

// HashLen is how many hex digits of an object's SHA-256 its name carries.
const HashLen = 16

// DatasetPrefix returns "dataset/period=P/".
func DatasetPrefix(dataset string, p Period) string {
	return dataset + "/period=" + p.Name() + "/"
}

// AgencyPrefix returns "agencies/agency=A/period=P/" for an agency id (A is
// its escaped form, keys.EscapeAgency).
func AgencyPrefix(agency string, p Period) string {
	return EscapedAgencyPrefix(keys.EscapeAgency(agency), p)
}

// EscapedAgencyPrefix is AgencyPrefix for an already escaped agency id.
func EscapedAgencyPrefix(escaped string, p Period) string {
	return DirAgencies + "/agency=" + escaped + "/period=" + p.Name() + "/"
}

// ManifestPrefix returns "manifests/period=P/".
func ManifestPrefix(p Period) string { return DirManifests + "/period=" + p.Name() + "/" }

// ManifestKey returns "manifests/period=P/manifest.json".
func ManifestKey(p Period) string { return ManifestPrefix(p) + "manifest.json" }

// IntentKey returns "manifests/period=P/pending-RUN.json": the record a
// publisher writes before it uploads a period's objects and deletes after
// its cleanup, so that the objects of an interrupted publication can be
// found and removed (see package publish).
func IntentKey(p Period, runID string) string {
	return ManifestPrefix(p) + intentPrefix + runID + ".json"
}

const intentPrefix = "pending-"

// IsIntentKey reports whether key names a publication intent:
// manifests/period=P/pending-RUN.json or manifests/month=M/pending-RUN.json,
// not a file of that name anywhere else.
func IsIntentKey(key string) bool {
	rest, ok := strings.CutPrefix(key, DirManifests+"/")
	dir, name, sub := strings.Cut(rest, "/")
	return ok && sub && (strings.HasPrefix(dir, "period=") || strings.HasPrefix(dir, "month=")) &&
		!strings.Contains(name, "/") && strings.HasPrefix(name, intentPrefix) && strings.HasSuffix(name, ".json")
}

// HashedName returns base-H.ext, H being the first HashLen hex digits of
// sum: "summary-0123456789abcdef.parquet".
func HashedName(base, ext string, sum [32]byte) string {
	return base + "-" + hex.EncodeToString(sum[:HashLen/2]) + "." + ext
}

// AgencySegment returns the escaped agency id of a key under agencies/,
// and false for any other key.
func AgencySegment(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, DirAgencies+"/agency=")
	if !ok {
		return "", false
	}
	esc, _, ok := strings.Cut(rest, "/")
	return esc, ok
}

// PeriodPrefixes returns every prefix that holds the period's objects
// outside agencies/: the datasets' and the manifests'.
func PeriodPrefixes(p Period) []string {
	out := make([]string, 0, len(Datasets)+1)
	for _, d := range Datasets {
		out = append(out, DatasetPrefix(d, p))
	}
	return append(out, ManifestPrefix(p))
}

// RecordDecisions reports whether a build of a period records its
// cross-period decisions (the duplicates object, and
// Manifest.CrossPeriodDecisions), cur being its current manifest (nil if
// none) and sameItems whether the build read the items cur recorded. This
// is the one place that decides it:
//
//   - a period never delivered, or whose current revision records them,
//     records them;
//   - a revision delivered before they were recorded is rebuilt without
//     them while its items are unchanged (a backfill, a repair: it must
//     reproduce the delivered objects, or the period would be republished
//     with no item changed), and gets them with its next restatement.
//
// A rebuild keeps the decisions of a revision that records them; of one
// that does not, the dedupe index is the only record.
func RecordDecisions(cur *Manifest, sameItems bool) bool {
	return cur == nil || cur.CrossPeriodDecisions || !sameItems
}

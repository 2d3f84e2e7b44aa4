package report

import (
	"fmt"
	"strings"

	"github.com/reportjob/reportjob/internal/keys"
)

// The monthly statements' layout (package monthclose publishes it). M is a
// month of statements.timezone, YYYY-MM.
const (
	// DatasetStatements holds statements/month=M/statements-H.parquet: every
	// agency's statement of month M, one row per (agency, currency).
	DatasetStatements = "statements"
	// DueStatementsPrefix holds manifests/due/period=P.json: a period whose
	// publication the statements have not taken in yet. The publisher
	// writes it before the period's manifest; the close deletes it once the
	// statements of the period's month (or the month its adjustment is
	// booked in) are published.
	DueStatementsPrefix = DirManifests + "/due/"
	// MonthManifestsPrefix is what every month manifest's key starts with.
	MonthManifestsPrefix = DirManifests + "/month="
)

// StatementsPrefix returns "statements/month=M/".
func StatementsPrefix(month string) string { return DatasetStatements + "/month=" + month + "/" }

// AgencyMonthPrefix returns "agencies/agency=A/month=M/" for an agency id.
func AgencyMonthPrefix(agency, month string) string {
	return DirAgencies + "/agency=" + keys.EscapeAgency(agency) + "/month=" + month + "/"
}

// AgencyOfMonthPrefix returns the agency id of an
// "agencies/agency=A/month=M/" prefix (AgencyMonthPrefix's inverse).
func AgencyOfMonthPrefix(prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(prefix, DirAgencies+"/agency=")
	if !ok {
		return "", false
	}
	esc, _, ok := strings.Cut(rest, "/month=")
	if !ok {
		return "", false
	}
	id, err := keys.UnescapeAgency(esc)
	return id, err == nil
}

// MonthManifestPrefix returns "manifests/month=M/".
func MonthManifestPrefix(month string) string { return MonthManifestsPrefix + month + "/" }

// MonthManifestKey returns "manifests/month=M/manifest.json": the commit
// record of month M's statements.
func MonthManifestKey(month string) string { return MonthManifestPrefix(month) + "manifest.json" }

// MonthIntentKey returns "manifests/month=M/pending-RUN.json".
func MonthIntentKey(month, runID string) string {
	return MonthManifestPrefix(month) + intentPrefix + runID + ".json"
}

// MonthIntentPartKey returns "manifests/month=M/pending-RUN-NNNNNN.json":
// the n-th intent (from 1) of a publication that names its agency files
// in parts, each written before the files it names are uploaded.
func MonthIntentPartKey(month, runID string, n int) string {
	return fmt.Sprintf("%s%s%s-%06d.json", MonthManifestPrefix(month), intentPrefix, runID, n)
}

// IsRunMonthIntentKey reports whether key is one of run runID's intents
// of month M: MonthIntentKey or a MonthIntentPartKey.
func IsRunMonthIntentKey(month, runID, key string) bool {
	rest, ok := strings.CutPrefix(key, MonthManifestPrefix(month)+intentPrefix+runID)
	if !ok || !IsMonthIntentKey(month, key) {
		return false
	}
	n := strings.TrimSuffix(rest, ".json")
	if n == "" {
		return true
	}
	n, ok = strings.CutPrefix(n, "-")
	if !ok || len(n) != 6 {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// IsMonthIntentKey reports whether key is an intent of month M's
// statements: manifests/month=M/pending-RUN.json, not a file of that
// name anywhere else.
func IsMonthIntentKey(month, key string) bool {
	return strings.HasPrefix(key, MonthManifestPrefix(month)) && IsIntentKey(key)
}

// StatementDueKey returns "manifests/due/period=P.json".
func StatementDueKey(p Period) string { return DueStatementsPrefix + "period=" + p.Name() + ".json" }

// MonthOfKey returns M of a key under manifests/month=M/, and false for
// any other key.
func MonthOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, MonthManifestsPrefix)
	if !ok {
		return "", false
	}
	m, _, ok := strings.Cut(rest, "/")
	return m, ok
}

// IsStatementKey reports whether key belongs to the monthly statements
// (statements/, agencies/agency=A/month=M/, manifests/month=M/,
// manifests/due/) rather than to a period.
func IsStatementKey(key string) bool {
	if strings.HasPrefix(key, DatasetStatements+"/") || strings.HasPrefix(key, MonthManifestsPrefix) ||
		strings.HasPrefix(key, DueStatementsPrefix) {
		return true
	}
	if _, ok := AgencySegment(key); ok {
		_, rest, _ := strings.Cut(strings.TrimPrefix(key, DirAgencies+"/agency="), "/")
		return strings.HasPrefix(rest, "month=")
	}
	return false
}

package monthclose

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// Which agencies' files a month revision renders (stated and enforced here
// only).
//
// A draft month is published again whenever one of its periods changes,
// but most agencies' statements do not change with it: an hourly run adds
// one period, with rows of the agencies that had transactions in it. An
// agency's statement revision is the month's statement revision in which
// its statement last changed; its files print that revision. A month
// revision renders the files of an agency only when the agency's
// statement differs from the one the previous revision published (its
// digest: every field its files show but the revision, and the agency
// files written); the others keep their files (same keys, same bytes), and
// the statements dataset file carries their revision. So a run renders
// statements for the agencies its periods touched: O(new items), not
// O(agencies of the month). The final revision changes every agency's
// status, so all are rendered then, with the final revision.

// digestVersion changes when what the digest covers changes (every agency
// is then rendered again once).
const digestVersion = "reportjob.statement-digest/1"

// agencyRevisions sets the revision of each of stmts (built at revision)
// from prev: an agency whose statement is unchanged since prev keeps
// prev's revision and files (returned in kept, by agency id). It returns
// the entries man lists. logoSHA is the sha256 of the logo the statements
// share (their Doc.Logo), hashed in place of its bytes.
func agencyRevisions(stmts []*statement.Agency, prev, man *Manifest, revision int, logoSHA string) ([]AgencyEntry, map[string][]report.FileInfo) {
	var before map[string]AgencyEntry
	var files map[string][]report.FileInfo
	if prev != nil && slices.Equal(prev.AgencyFiles, man.AgencyFiles) {
		before = make(map[string]AgencyEntry, len(prev.Agencies))
		for _, e := range prev.Agencies {
			before[e.AgencyID] = e
		}
		files = agencyFilesOf(prev)
	}
	kept := map[string][]report.FileInfo{}
	entries := make([]AgencyEntry, len(stmts))
	for i, s := range stmts {
		s.Revision = revision
		d := digest(s, man.AgencyFiles, logoSHA)
		if e, ok := before[s.AgencyID]; ok && e.Digest == d && e.Revision <= revision {
			if fs := files[report.AgencyMonthPrefix(s.AgencyID, s.Month)]; len(fs) == len(man.AgencyFiles) {
				s.Revision = e.Revision
				if e.Revision < revision {
					kept[s.AgencyID] = fs
				}
			}
		}
		entries[i] = AgencyEntry{AgencyID: s.AgencyID, Revision: s.Revision, Digest: d}
	}
	return entries, kept
}

// agencyFilesOf returns m's agency files by agency folder
// (agencies/agency=A/month=M/).
func agencyFilesOf(m *Manifest) map[string][]report.FileInfo {
	out := map[string][]report.FileInfo{}
	for _, f := range m.Files {
		if i := strings.LastIndexByte(f.Key, '/'); i >= 0 && strings.HasPrefix(f.Key, report.DirAgencies+"/") {
			out[f.Key[:i+1]] = append(out[f.Key[:i+1]], f)
		}
	}
	return out
}

// digest is the SHA-256 of what s's files show but its revision (its Doc
// and rate lines included, the logo by logoSHA), and of the agency files
// written. A LegacyChain statement is hashed as the statements written
// before digests were (legacyAgency), so that the digests its month
// manifest recorded still match.
func digest(s *statement.Agency, formats []string, logoSHA string) string {
	c := *s
	c.Revision = 0
	c.Doc.Logo = nil
	h := sha256.New()
	if c.LegacyChain {
		fmt.Fprintf(h, "%s\n%q\n%+v", digestVersion, formats, legacyOf(&c))
	} else {
		fmt.Fprintf(h, "%s\n%q\n%+v\nlogo %s", digestVersion, formats, c, logoSHA)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// legacyAgency, legacyAdjustment and legacyPeriodRef are statement.Agency,
// Adjustment and PeriodRef as they were before digests: the same field
// names in the same order, so that %+v prints what it printed then.
type legacyAgency struct {
	Job, AgencyID, Month, Zone string
	Status                     statement.Status
	Revision                   int
	ClosesAt                   string
	Lines                      []statement.Line
	Days                       []statement.Day
	Adjustments                []legacyAdjustment
	Periods                    []legacyPeriodRef
}

type legacyAdjustment struct {
	Period                   report.Period
	Month                    string
	FromRevision, ToRevision int
	Reason                   string
	Currency                 money.Currency
	statement.Totals
}

type legacyPeriodRef struct {
	Period         report.Period
	Revision       int
	ManifestKey    string
	ManifestSHA256 string
}

func legacyOf(s *statement.Agency) legacyAgency {
	l := legacyAgency{Job: s.Job, AgencyID: s.AgencyID, Month: s.Month, Zone: s.Zone, Status: s.Status, Revision: s.Revision,
		ClosesAt: s.ClosesAt, Lines: s.Lines, Days: s.Days}
	for _, a := range s.Adjustments {
		l.Adjustments = append(l.Adjustments, legacyAdjustment{Period: a.Period, Month: a.Month, FromRevision: a.FromRevision,
			ToRevision: a.ToRevision, Reason: a.Reason, Currency: a.Currency, Totals: a.Totals})
	}
	for _, p := range s.Periods {
		l.Periods = append(l.Periods, legacyPeriodRef{Period: p.Period, Revision: p.Revision, ManifestKey: p.ManifestKey,
			ManifestSHA256: p.ManifestSHA256})
	}
	return l
}

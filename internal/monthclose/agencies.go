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

// revisions decides each agency's revision from prev (see above). It
// looks prev's entries and files up in place (prev lists them sorted by
// agency id and by key), not in copies.
type revisions struct {
	man  *Manifest
	prev *Manifest // nil: every agency is rendered
}

// newRevisions reads prev (nil: every agency is rendered) for the
// revision of man.
func newRevisions(prev, man *Manifest) *revisions {
	rv := &revisions{man: man}
	if prev != nil && slices.Equal(prev.AgencyFiles, man.AgencyFiles) {
		rv.prev = prev
		if !slices.IsSortedFunc(prev.Agencies, func(x, y AgencyEntry) int { return strings.Compare(x.AgencyID, y.AgencyID) }) {
			slices.SortStableFunc(prev.Agencies, func(x, y AgencyEntry) int { return strings.Compare(x.AgencyID, y.AgencyID) })
		}
		if !slices.IsSortedFunc(prev.Files, func(x, y report.FileInfo) int { return strings.Compare(x.Key, y.Key) }) {
			slices.SortStableFunc(prev.Files, func(x, y report.FileInfo) int { return strings.Compare(x.Key, y.Key) })
		}
	}
	return rv
}

// before returns prev's entry of agency id.
func (rv *revisions) before(id string) (AgencyEntry, bool) {
	if rv.prev == nil {
		return AgencyEntry{}, false
	}
	es := rv.prev.Agencies
	i, ok := slices.BinarySearchFunc(es, id, func(e AgencyEntry, id string) int { return strings.Compare(e.AgencyID, id) })
	if !ok {
		return AgencyEntry{}, false
	}
	return es[i], true
}

// files returns prev's files under prefix (an agency's folder).
func (rv *revisions) files(prefix string) []report.FileInfo {
	fs := rv.prev.Files
	i, _ := slices.BinarySearchFunc(fs, prefix, func(f report.FileInfo, p string) int { return strings.Compare(f.Key, p) })
	j, nested := i, false
	for ; j < len(fs) && strings.HasPrefix(fs[j].Key, prefix); j++ {
		nested = nested || strings.Contains(fs[j].Key[len(prefix):], "/")
	}
	if !nested {
		return fs[i:j:j]
	}
	var out []report.FileInfo // only the folder's own files
	for _, f := range fs[i:j] {
		if !strings.Contains(f.Key[len(prefix):], "/") {
			out = append(out, f)
		}
	}
	return out
}

// entry sets the revision of s (built at revision): an agency whose
// statement is unchanged since prev keeps prev's revision and files
// (returned: published again as they are). It returns the entry man lists.
// logoSHA is the sha256 of the logo the statements share (their
// Doc.Logo), hashed in place of its bytes.
func (rv *revisions) entry(s *statement.Agency, revision int, logoSHA string) (AgencyEntry, []report.FileInfo) {
	var kept []report.FileInfo
	s.Revision = revision
	d := digest(s, rv.man.AgencyFiles, logoSHA)
	if e, ok := rv.before(s.AgencyID); ok && e.Digest == d && e.Revision <= revision {
		if fs := rv.files(report.AgencyMonthPrefix(s.AgencyID, s.Month)); len(fs) == len(rv.man.AgencyFiles) {
			s.Revision = e.Revision
			if e.Revision < revision {
				kept = fs
			}
		}
	}
	return AgencyEntry{AgencyID: s.AgencyID, Revision: s.Revision, Digest: d}, kept
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

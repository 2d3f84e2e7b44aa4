package monthclose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// How a statement becomes a document (SPEC section 7, version 4; stated
// and enforced here only).
//
// A close that builds a month to publish it reads the agency directory
// (statements.directory) and the issuer's logo once, on the first month
// it builds, before it writes anything; a directory that cannot be read or
// is invalid stops the close with its error. Each statement's Doc then
// gets: its number (numbers.go); the issuer, its payment instructions and
// logo (statements.issuer); the recipient from the agency's directory
// entry (legal name, address, country, tax id, e-mails), Listed, its
// locale ("en" when the entry gives none) and its payment terms (the
// entry's, else the issuer's). An agency the directory lacks gets its id as
// its legal name, Listed false, and is counted (Result.UnlistedAgencies,
// one warning per close). The dates: a final's issue date is the day (in
// statements.timezone) of the close that made it final; a draft's is "as
// of" the last day its own periods reach (the end of its last period minus
// an instant; the month's first day when it has none), so that a draft's
// bytes stay a function of its content. The due date is the issue date +
// the terms.
//
// The month manifest records what the directory and config gave
// (Manifest.Document, AgencyEntry's Number, Listed, Locale,
// PaymentTermsDays, Recipient), and the logo is an object of the month
// (manifests/month=M/logo-H.png): verify and a restore of a final re-make
// every Doc from that record and the statement CSVs, never from today's
// directory or config, so a final's files are made again with the same
// bytes. A directory change shows in the next revision of a draft month (a
// rebuild that publishes: a new period, say); a final never changes.

// ErrDocuments is wrapped by the error of a close that cannot read the
// agency directory or the issuer's logo.
var ErrDocuments = errors.New("statement documents")

// Documents is what the close makes each statement a document with.
type Documents struct {
	// Directory reads the agency directory; nil when none is configured
	// (every agency is then unlisted, without a warning).
	Directory func(ctx context.Context) (*directory.Directory, error)
	// Issuer is statements.issuer (Emails unused).
	Issuer              statement.Party
	PaymentInstructions string
	// PaymentTermsDays are the issuer's default terms.
	PaymentTermsDays int
	// Logo reads the issuer's PNG; nil when none is configured.
	Logo func(ctx context.Context) ([]byte, error)
	// NumberPrefix starts every statement number; "" is the job's name.
	NumberPrefix string
}

// DocumentRecord is what a month revision's documents share (Manifest.Document).
type DocumentRecord struct {
	Issuer              PartyRecord `json:"issuer"`
	PaymentInstructions string      `json:"payment_instructions,omitempty"`
	PaymentTermsDays    int         `json:"payment_terms_days"`
	// IssueDate is a final's issue date (YYYY-MM-DD in the month's zone);
	// "" in a draft, whose dates follow its content.
	IssueDate string `json:"issue_date,omitempty"`
	// Directory is where the agency directory was read from ("" when none).
	Directory string `json:"directory,omitempty"`
	// UnlistedAgencies counts the month's agencies the directory lacks
	// (named by their id); 0 without a directory.
	UnlistedAgencies int `json:"unlisted_agencies,omitempty"`
}

// PartyRecord is a statement.Party in a month manifest.
type PartyRecord struct {
	LegalName string   `json:"legal_name"`
	Address   []string `json:"address,omitempty"`
	Country   string   `json:"country,omitempty"`
	TaxID     string   `json:"tax_id,omitempty"`
	Contact   string   `json:"contact,omitempty"`
	Emails    []string `json:"emails,omitempty"`
}

func partyRecord(p statement.Party) PartyRecord {
	return PartyRecord{LegalName: p.LegalName, Address: p.Address, Country: p.Country, TaxID: p.TaxID, Contact: p.Contact, Emails: p.Emails}
}

func (p PartyRecord) party() statement.Party {
	return statement.Party{LegalName: p.LegalName, Address: p.Address, Country: p.Country, TaxID: p.TaxID, Contact: p.Contact, Emails: p.Emails}
}

// logoBase names the month's logo object, manifests/month=M/logo-H.png.
const logoBase = "logo"

// docState is what one close read for the documents.
type docState struct {
	dir      *directory.Directory // nil: none configured
	logo     []byte
	logoSHA  string
	unlisted map[string]bool // agencies the directory lacks, over the close
}

// documents returns what this close read for the documents, reading it on
// the first call of the close (Update resets it).
func (c *Closer) documents(ctx context.Context) (*docState, error) {
	if c.docs != nil {
		return c.docs, nil
	}
	d := &docState{unlisted: map[string]bool{}}
	if c.Docs.Directory != nil {
		dir, err := c.Docs.Directory(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: the agency directory (statements.directory): %w", ErrDocuments, err)
		}
		d.dir = dir
	}
	if c.Docs.Logo != nil {
		logo, err := c.Docs.Logo(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: the issuer's logo (statements.issuer.logo): %w", ErrDocuments, err)
		}
		d.logo, d.logoSHA = logo, shaHex(logo)
	}
	c.docs = d
	return d, nil
}

func shaHex(b []byte) string {
	if b == nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// numberPrefix is the prefix of the statement numbers this close gives.
func (c *Closer) numberPrefix() string {
	if c.Docs.NumberPrefix != "" {
		return c.Docs.NumberPrefix
	}
	return c.Job
}

// documentRecord is what man's statements' documents share, from the
// directory and config d (prev being the month's published revision):
// issued is the close's instant, for a final.
func (c *Closer) documentRecord(man *Manifest, d *docState, issued time.Time) *DocumentRecord {
	rec := &DocumentRecord{Issuer: partyRecord(c.Docs.Issuer), PaymentInstructions: c.Docs.PaymentInstructions,
		PaymentTermsDays: c.Docs.PaymentTermsDays}
	if d.dir != nil {
		rec.Directory = d.dir.Source()
	}
	if man.Final() {
		rec.IssueDate = statement.DayOf(issued, c.Loc)
	}
	return rec
}

// fillDocument makes s a document from the directory and config d, with
// its number (numbers.go): rec is the month's document record, which
// counts, with count, an agency the directory lacks (entries are set by
// revisions.entry after).
func (c *Closer) fillDocument(s *statement.Agency, d *docState, rec *DocumentRecord, number string, count bool) {
	doc := &s.Doc
	doc.Number = number
	doc.Issuer, doc.PaymentInstructions, doc.Logo = c.Docs.Issuer, c.Docs.PaymentInstructions, d.logo
	doc.Recipient, doc.Locale, doc.PaymentTermsDays = statement.Party{LegalName: s.AgencyID}, "en", c.Docs.PaymentTermsDays
	if e, ok := d.dir.Lookup(s.AgencyID); ok {
		doc.Listed = true
		doc.Recipient = statement.Party{LegalName: e.LegalName, Address: e.Address, Country: e.Country, TaxID: e.TaxID, Emails: e.Emails}
		if e.Locale != "" {
			doc.Locale = e.Locale
		}
		if e.HasTerms {
			doc.PaymentTermsDays = e.PaymentTermsDays
		}
	} else if d.dir != nil && count {
		d.unlisted[s.AgencyID] = true
		rec.UnlistedAgencies++
	}
	setDates(s, rec.IssueDate, c.Loc)
}

// setDates sets s's issue and due dates: a final's issue date is given;
// a draft's is "as of" the last day its own periods reach.
func setDates(s *statement.Agency, finalIssue string, loc *time.Location) {
	issue := finalIssue
	if issue == "" {
		if n := len(s.Periods); n > 0 {
			issue = statement.DayOf(s.Periods[n-1].Period.End.Add(-time.Nanosecond), loc)
		} else {
			issue = s.Month + "-01"
		}
	}
	s.Doc.IssueDate = issue
	if t, err := time.Parse(time.DateOnly, issue); err == nil {
		s.Doc.DueDate = t.AddDate(0, 0, s.Doc.PaymentTermsDays).Format(time.DateOnly)
	}
}

// recordEntry adds s's document to its entry.
func recordEntry(e *AgencyEntry, s *statement.Agency) {
	e.Number, e.Listed, e.Locale, e.PaymentTermsDays = s.Doc.Number, s.Doc.Listed, s.Doc.Locale, s.Doc.PaymentTermsDays
	if s.Doc.Listed {
		r := partyRecord(s.Doc.Recipient)
		e.Recipient = &r
	}
}

// docFromRecord sets s.Doc from man's record (e: s's entry, nil when none).
func docFromRecord(s *statement.Agency, man *Manifest, e *AgencyEntry, logo []byte, loc *time.Location) {
	rec := man.Document
	s.Doc = statement.Document{Issuer: rec.Issuer.party(), PaymentInstructions: rec.PaymentInstructions, Logo: logo,
		Recipient: statement.Party{LegalName: s.AgencyID}, Locale: "en", PaymentTermsDays: rec.PaymentTermsDays, Number: s.Doc.Number}
	if e != nil {
		s.Doc.Number, s.Doc.Listed, s.Doc.PaymentTermsDays = e.Number, e.Listed, e.PaymentTermsDays
		if e.Locale != "" {
			s.Doc.Locale = e.Locale
		}
		if e.Recipient != nil {
			s.Doc.Recipient = e.Recipient.party()
		}
	}
	if loc == nil {
		loc = time.UTC
		if l, err := time.LoadLocation(man.Timezone); err == nil {
			loc = l
		}
	}
	setDates(s, rec.IssueDate, loc)
}

// logoInfo returns the logo object man lists.
func logoInfo(man *Manifest) (report.FileInfo, bool) {
	for _, f := range man.Files {
		if strings.HasPrefix(f.Key, report.MonthManifestPrefix(man.Month)+logoBase+"-") {
			return f, true
		}
	}
	return report.FileInfo{}, false
}

// recordedLogo reads the logo month man lists: its own object, or, when
// that is lost, the configured logo if it has the sha256 man lists (else
// none: what is rendered with it then differs, and is named as lost).
func (c *Closer) recordedLogo(ctx context.Context, man *Manifest) ([]byte, error) {
	info, ok := logoInfo(man)
	if !ok {
		return nil, nil
	}
	file, n, err := c.Periods.Fetch(ctx, info, c.Dir)
	if err == nil {
		defer func() { file.Close(); os.Remove(file.Name()) }()
		b, err := io.ReadAll(io.NewSectionReader(file, 0, n))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", info.Key, err)
		}
		return b, nil
	}
	if c.Docs.Logo != nil {
		if b, err := c.Docs.Logo(ctx); err == nil && shaHex(b) == info.SHA256 {
			return b, nil
		}
	}
	c.Log.Warn("the month's logo is lost, and the configured one is not it", "month", man.Month, "key", info.Key)
	return nil, nil
}

// logoFile writes logo (the one the statements share) as the month's
// logo object; none without a logo.
func (c *Closer) logoFile(m string, logo []byte) ([]encode.File, error) {
	if logo == nil {
		return nil, nil
	}
	f, err := encode.NewFile(c.Dir, report.MonthManifestPrefix(m), logoBase, "png", "image/png", 0,
		func(w io.Writer) error { _, err := w.Write(logo); return err })
	if err != nil {
		return nil, fmt.Errorf("write the logo of %s: %w", m, err)
	}
	return []encode.File{f}, nil
}

// warnUnlisted logs the close's one warning about the agencies the
// directory lacks, and returns their count.
func (c *Closer) warnUnlisted() int {
	if c.docs == nil || len(c.docs.unlisted) == 0 {
		return 0
	}
	ids := make([]string, 0, len(c.docs.unlisted))
	for id := range c.docs.unlisted {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	first := ids[:min(len(ids), 5)]
	c.Log.Warn("agencies missing from the agency directory: their statements name them by id (add them to statements.directory)",
		"count", len(ids), "first", strings.Join(first, ", "), "directory", c.docs.dir.Source())
	return len(ids)
}

package monthclose

import (
	"context"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// How a month's statements are made (stated and enforced here only).
//
// A month of many agencies is never held as statements: the builder keeps
// what it added up per agency, and each agency's statement is made from
// it when needed, in agency id order, then dropped. The close makes them
// twice: once to record what the manifest lists (each agency's entry and
// digest, its number, the totals; revisions.entry decides which agencies'
// files are kept), and, when the month is published, once more to write
// the statements dataset file row by row and render each agency's files
// (Closer.renders at a time). Making a statement is a function of the
// builder, the documents read once per close and the revision recorded in
// the first pass, so both passes make the same statement.

// stream makes a month's statements one at a time.
type stream struct {
	ids []string // the agencies with a statement, sorted
	// gen makes the statement of ids[i] (its document and revision set),
	// once for each i: the builder forgets each agency it made.
	gen func(i int) (*statement.Agency, error)
	// numbered: some statement has a number (the dataset file's layout).
	numbered bool
	rows     int64  // the statements' lines: the dataset file's rows
	logo     []byte // the logo the statements share (nil: none)
}

// statements makes bt's statements from b (every period and adjustment
// added) and records them in bt.man: documents (from the directory and
// config, or from prev's record), numbers, entries, revisions and totals.
func (c *Closer) statements(ctx context.Context, bt *built, b *statement.Builder, w *monthWork, prev *Manifest, docs bool,
	revision int, closesAt string) error {
	man := bt.man
	ids := b.IDs()
	status := statement.Status(man.Status)
	var (
		numbers []string
		logo    []byte
		d       *docState
		byID    map[string]*AgencyEntry
		err     error
	)
	switch {
	case w.record && docs:
		man.Document, man.RetiredNumbers = prev.Document, prev.RetiredNumbers
		if man.Document != nil {
			if logo, err = c.recordedLogo(ctx, prev); err != nil {
				return err
			}
			byID = make(map[string]*AgencyEntry, len(prev.Agencies))
			for i := range prev.Agencies {
				byID[prev.Agencies[i].AgencyID] = &prev.Agencies[i]
			}
		}
	case !w.record:
		if d, err = c.documents(ctx); err != nil {
			return err
		}
		numbers, man.RetiredNumbers = assignNumbers(c.numberPrefix(), man.Month, ids, prev)
		man.Document = c.documentRecord(man, d, w.now)
		logo = d.logo
	}
	mk := func(i int, first bool) (*statement.Agency, error) {
		stmt := b.Statement
		if !first {
			stmt = b.Take // gen makes each statement a last time
		}
		s, err := stmt(ids[i], status, revision, closesAt)
		if err != nil {
			return nil, err
		}
		s.LegacyChain = w.legacyChain
		switch {
		case w.record && docs && man.Document != nil:
			docFromRecord(s, prev, byID[s.AgencyID], logo, c.Loc)
		case !w.record:
			c.fillDocument(s, d, man.Document, numbers[i], first)
		}
		return s, nil
	}
	from := prev
	if w.force {
		from = nil // a repair renders every agency's files anew
	}
	rv := newRevisions(from, man)
	logoSHA := shaHex(logo)
	man.Agencies, bt.kept = make([]AgencyEntry, len(ids)), map[string][]report.FileInfo{}
	var tt totals
	for i := range ids {
		s, err := mk(i, true)
		if err != nil {
			return err
		}
		e, kept := rv.entry(s, revision, logoSHA)
		if kept != nil {
			bt.kept[report.AgencyMonthPrefix(s.AgencyID, s.Month)] = kept
		}
		if man.Document != nil {
			recordEntry(&e, s)
			if !w.record && e.Recipient != nil {
				e.Recipient = nil // the directory's (man.recipient), not held per agency
			}
		}
		man.Agencies[i] = e
		tt.add(s)
		bt.numbered = bt.numbered || s.Doc.Number != ""
		bt.rows += int64(len(s.Lines))
	}
	if man.Totals, err = tt.result(); err != nil {
		return err
	}
	if !w.record && d.dir != nil {
		dir := d.dir
		man.recipient = func(id string) *PartyRecord {
			e, ok := dir.Lookup(id)
			if !ok {
				return nil
			}
			r := partyRecord(statement.Party{LegalName: e.LegalName, Address: e.Address, Country: e.Country, TaxID: e.TaxID, Emails: e.Emails})
			return &r
		}
	}
	bt.ids, bt.logo = ids, logo
	bt.gen = func(i int) (*statement.Agency, error) {
		s, err := mk(i, false)
		if err != nil {
			return nil, err
		}
		s.Revision = man.Agencies[i].Revision
		return s, nil
	}
	return nil
}

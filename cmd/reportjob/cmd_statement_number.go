package main

import (
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/statement"
)

// numberMonth checks statement --number's flags and returns the month the
// number names (docs/statements.md, Statement numbers).
func (c *cli) numberMonth(number, month, agency string, closeM bool) (string, error) {
	if month != "" || agency != "" || closeM {
		return "", usagef("statement --number names the month and the agency: give neither --month, --agency nor --close with it")
	}
	n, err := statement.ParseNumber(number)
	if err != nil {
		return "", usagef("statement --number: %v", err)
	}
	if want := c.cfg.Statements.Issuer.NumberPrefix; n.Prefix != want {
		return "", notFoundf("statement --number %s: %w: its prefix %q is not this job's (%q, statements.issuer.number_prefix)",
			number, monthclose.ErrNoStatement, n.Prefix, want)
	}
	return n.Month, nil
}

// numberAgency returns the agency whose statement in month manifest m has
// number.
func numberAgency(m *monthclose.Manifest, number string) (string, error) {
	for _, e := range m.Agencies {
		if e.Number == number {
			return e.AgencyID, nil
		}
	}
	for _, r := range m.RetiredNumbers {
		if r.Number == number {
			return "", notFoundf("statement --number %s: %w: it is agency %q's, which has no statement in %s since its rows were restated away "+
				"(the number stays reserved for it)", number, monthclose.ErrNoStatement, r.AgencyID, m.Month)
		}
	}
	return "", notFoundf("statement --number %s: %w with this number: %s (statement revision %d) numbers %d agencies",
		number, monthclose.ErrNoStatement, m.Month, m.StatementRevision, numbered(m))
}

// agencyNumber returns agency's statement number in m ("" when none).
func agencyNumber(m *monthclose.Manifest, agency string) string {
	for _, e := range m.Agencies {
		if e.AgencyID == agency {
			return e.Number
		}
	}
	return ""
}

func numbered(m *monthclose.Manifest) int {
	n := 0
	for _, e := range m.Agencies {
		if e.Number != "" {
			n++
		}
	}
	return n
}

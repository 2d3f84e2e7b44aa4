package monthclose

import (
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/statement"
)

// How statement numbers are given (docs/statements.md, Statement numbers;
// stated and enforced here only).
//
// A number is PREFIX-YYYYMM-NNNNNN (statement.FormatNumber): the month's
// first revision with numbers gives its agencies, sorted by id, the
// sequence numbers 1..n. Every later revision keeps each number its
// previous revision recorded (AgencyEntry.Number) and gives the agencies
// new to the month max+1, ... in id order, max being the highest sequence
// number the previous revision recorded, its retired ones included. An
// agency that has no statement in a revision (its rows restated away)
// keeps its number in Manifest.RetiredNumbers, and gets it back if it
// returns: a number is never given to another agency. A final month is
// never published again, so its numbers never change. The month manifest
// is replaced only by a conditional write of its next revision, which
// carries them on: two publishers can never give one number twice.

// assignNumbers sets the number of every statement of stmts (sorted by
// agency id) from prev (the month's published revision, nil for none)
// and returns the retired numbers the new revision records.
func assignNumbers(prefix, month string, stmts []*statement.Agency, prev *Manifest) []AgencyNumber {
	had := map[string]string{}
	top := 0
	note := func(id, number string) {
		if number == "" {
			return
		}
		had[id] = number
		if n, err := statement.ParseNumber(number); err == nil {
			top = max(top, n.Seq)
		}
	}
	if prev != nil {
		for _, e := range prev.Agencies {
			note(e.AgencyID, e.Number)
		}
		for _, r := range prev.RetiredNumbers {
			note(r.AgencyID, r.Number)
		}
	}
	present := make(map[string]bool, len(stmts))
	for _, s := range stmts {
		present[s.AgencyID] = true
		if n, ok := had[s.AgencyID]; ok {
			s.Doc.Number = n
			continue
		}
		top++
		s.Doc.Number = statement.FormatNumber(prefix, month, top)
	}
	var retired []AgencyNumber
	for id, n := range had {
		if !present[id] {
			retired = append(retired, AgencyNumber{AgencyID: id, Number: n})
		}
	}
	slices.SortFunc(retired, func(x, y AgencyNumber) int { return strings.Compare(x.AgencyID, y.AgencyID) })
	return retired
}

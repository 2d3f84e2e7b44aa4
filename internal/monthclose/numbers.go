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

// assignNumbers returns the number of each agency of ids (sorted), from
// prev (the month's published revision, nil for none), and the retired
// numbers the new revision records.
func assignNumbers(prefix, month string, ids []string, prev *Manifest) ([]string, []AgencyNumber) {
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
	numbers := make([]string, len(ids))
	for i, id := range ids {
		if n, ok := had[id]; ok {
			numbers[i] = n
			delete(had, id)
			continue
		}
		top++
		numbers[i] = statement.FormatNumber(prefix, month, top)
	}
	var retired []AgencyNumber
	for id, n := range had {
		retired = append(retired, AgencyNumber{AgencyID: id, Number: n})
	}
	slices.SortFunc(retired, func(x, y AgencyNumber) int { return strings.Compare(x.AgencyID, y.AgencyID) })
	return numbers, retired
}

package report

import (
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Rechecks (report.recheck_after): each delivered period is read once more
// at each delay after its end, unless it was already read after that
// moment (its delivery was late, or an earlier recheck ran late). A period
// whose items were last read at `read` is owed a recheck at delay d when
// read < end+d; that recheck is due once now >= end+d.

// RecheckOwed reports whether a period ending at end, last read at read,
// is owed any recheck: then it keeps an entry in the job's state.
func RecheckOwed(end, read time.Time, delays []time.Duration) bool {
	for _, d := range delays {
		if read.Before(end.Add(d)) {
			return true
		}
	}
	return false
}

// RecheckDue reports whether e is due a recheck at now.
func RecheckDue(e checkpoint.Recheck, delays []time.Duration, now time.Time) bool {
	for _, d := range delays {
		at := e.End.Add(d)
		if e.Read.Before(at) && !now.Before(at) {
			return true
		}
	}
	return false
}

// NextRecheck returns when e's next recheck is due (zero when none is
// owed).
func NextRecheck(e checkpoint.Recheck, delays []time.Duration) time.Time {
	var next time.Time
	for _, d := range delays {
		at := e.End.Add(d)
		if e.Read.Before(at) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// RechecksDue returns the entries due at now, oldest period first, at most
// max of them, and how many more are due.
func RechecksDue(entries []checkpoint.Recheck, delays []time.Duration, now time.Time, max int) (due []checkpoint.Recheck, remaining int) {
	for _, e := range entries {
		if !RecheckDue(e, delays, now) {
			continue
		}
		if len(due) < max {
			due = append(due, e)
		} else {
			remaining++
		}
	}
	return due, remaining
}

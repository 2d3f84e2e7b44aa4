package report

import (
	"fmt"
	"time"
)

// Shorthands the period tests use: a grid of one period length with no
// recorded epochs.

// Due returns the periods due at now on a grid of period d with no
// recorded epochs (Grid.Due).
func Due(checkpoint, start, now time.Time, d, lateness time.Duration, max int) (due []Period, remaining int, err error) {
	return Grid{Checkpoint: checkpoint, Start: start, Period: d}.Due(now, lateness, max)
}

// Range returns the periods in [from, to) of length d (Grid.Range of a
// grid of period d from from).
func Range(from, to time.Time, d time.Duration) ([]Period, error) {
	if !Aligned(from, d) {
		return nil, fmt.Errorf("--from %s is not a period boundary (period %s, aligned to UTC midnight)", from.UTC().Format(time.RFC3339), FormatDuration(d))
	}
	return Grid{Start: from, Period: d}.Range(from, to)
}

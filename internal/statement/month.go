package statement

import (
	"fmt"
	"time"
)

// MonthLayout is a month's name: YYYY-MM.
const MonthLayout = "2006-01"

// MonthOf returns the month (in loc) that t falls in.
func MonthOf(t time.Time, loc *time.Location) string { return t.In(loc).Format(MonthLayout) }

// DayOf returns the day (in loc, YYYY-MM-DD) that t falls in.
func DayOf(t time.Time, loc *time.Location) string { return t.In(loc).Format(time.DateOnly) }

// Bounds returns the instants month m (YYYY-MM in loc) starts and ends at,
// in UTC.
func Bounds(m string, loc *time.Location) (start, end time.Time, err error) {
	t, err := time.ParseInLocation(MonthLayout, m, loc)
	if err != nil || t.Format(MonthLayout) != m {
		return time.Time{}, time.Time{}, fmt.Errorf("month %q: must be YYYY-MM, e.g. 2026-03", m)
	}
	return t.UTC(), t.AddDate(0, 1, 0).UTC(), nil
}

// Next returns the month after m (a valid month).
func Next(m string) string {
	t, _ := time.Parse(MonthLayout, m)
	return t.AddDate(0, 1, 0).Format(MonthLayout)
}

// Prev returns the month before m (a valid month).
func Prev(m string) string {
	t, _ := time.Parse(MonthLayout, m)
	return t.AddDate(0, -1, 0).Format(MonthLayout)
}

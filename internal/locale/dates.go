package locale

import (
	"strconv"
	"time"
)

// Date is a calendar day (YYYY-MM-DD) as the locale writes it, from the
// catalog's pattern.date and month names: "4 December 2026", "4 décembre
// 2026", "4. Dezember 2026", "2026年12月4日". A malformed day is returned
// as is.
func (l *Locale) Date(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	m := int(t.Month())
	return l.T("pattern.date",
		"d", strconv.Itoa(t.Day()),
		"m", strconv.Itoa(m),
		"month", l.T("month."+strconv.Itoa(m)),
		"yyyy", year(t))
}

// Month is a month (YYYY-MM) as the locale names it, from the catalog's
// pattern.month and month names (month_standalone.N when the catalog has
// them): "March 2026", "mars 2026", "marzo de 2026", "2026年3月". A
// malformed month is returned as is.
func (l *Locale) Month(month string) string {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return month
	}
	m := strconv.Itoa(int(t.Month()))
	name, ok := l.cat["month_standalone."+m]
	if !ok {
		name = l.T("month." + m)
	}
	return l.T("pattern.month", "m", m, "month", name, "yyyy", year(t))
}

func year(t time.Time) string { return t.Format("2006") }

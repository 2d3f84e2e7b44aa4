package locale

import "testing"

func TestDateAndMonth(t *testing.T) {
	tests := []struct{ tag, date, month, jan string }{
		// Date("2026-12-04"), Month("2026-03"), Date("2027-01-01")
		{"en", "4 December 2026", "March 2026", "1 January 2027"},
		{"fr", "4 décembre 2026", "mars 2026", "1 janvier 2027"},
		{"de", "4. Dezember 2026", "März 2026", "1. Januar 2027"},
		{"es", "4 de diciembre de 2026", "marzo de 2026", "1 de enero de 2027"},
		{"it", "4 dicembre 2026", "marzo 2026", "1 gennaio 2027"},
		{"pt", "4 de dezembro de 2026", "março de 2026", "1 de janeiro de 2027"},
		{"nl", "4 december 2026", "maart 2026", "1 januari 2027"},
		{"ja", "2026年12月4日", "2026年3月", "2027年1月1日"},
		{"pt-BR", "4 de dezembro de 2026", "março de 2026", "1 de janeiro de 2027"},
		{"fr-CH", "4 décembre 2026", "mars 2026", "1 janvier 2027"},
		{"de-CH", "4. Dezember 2026", "März 2026", "1. Januar 2027"},
		{"sv", "4 December 2026", "March 2026", "1 January 2027"}, // no catalog: English
	}
	for _, tc := range tests {
		l := mustParse(t, tc.tag)
		if got := l.Date("2026-12-04"); got != tc.date {
			t.Errorf("%s: Date = %q, want %q", tc.tag, got, tc.date)
		}
		if got := l.Month("2026-03"); got != tc.month {
			t.Errorf("%s: Month = %q, want %q", tc.tag, got, tc.month)
		}
		if got := l.Date("2027-01-01"); got != tc.jan {
			t.Errorf("%s: Date = %q, want %q", tc.tag, got, tc.jan)
		}
	}
	l := mustParse(t, "fr")
	for _, bad := range []string{"2026-13-01", "04/12/2026", ""} {
		if got := l.Date(bad); got != bad {
			t.Errorf("Date(%q) = %q, want it unchanged", bad, got)
		}
	}
	if got := l.Month("2026-3"); got != "2026-3" {
		t.Errorf("Month(2026-3) = %q, want it unchanged", got)
	}
}

// TestMonthStandalone: a catalog's month_standalone.N names the month in
// Month, month.N stays for dates.
func TestMonthStandalone(t *testing.T) {
	l := &Locale{cat: map[string]string{
		"pattern.date": "{d} {month} {yyyy}", "pattern.month": "{month} {yyyy}",
		"month.3": "marca", "month_standalone.3": "marzec",
	}, en: catalogs()["en"], num: &english}
	if got, want := l.Month("2026-03"), "marzec 2026"; got != want {
		t.Errorf("Month = %q, want %q", got, want)
	}
	if got, want := l.Date("2026-03-04"), "4 marca 2026"; got != want {
		t.Errorf("Date = %q, want %q", got, want)
	}
}

package pdf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// Agency ids in the scripts a statement must print (the CJK one and the
// emoji are replaced glyph by glyph).
const (
	idLatin    = "Agence Éloïse Müller & Søn, Bordeaux-Mérignac"
	idGreek    = "Ταξιδιωτικό Γραφείο Αθηνών"
	idCyrillic = "Турагентство «Байкал»"
	idCJK      = "東京トラベル"
	idEmoji    = "Sunny Trips ☀😀"
)

func currency(t testing.TB, code string) money.Currency {
	t.Helper()
	c, err := money.LookupCurrency(code)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func add(t testing.TB, a, b money.Total) money.Total {
	t.Helper()
	s, ok := a.Add(b)
	if !ok {
		t.Fatal("total overflow")
	}
	return s
}

func addTotals(t testing.TB, a *statement.Totals, b statement.Totals) {
	a.PurchaseCount += b.PurchaseCount
	a.RefundCount += b.RefundCount
	a.Gross = add(t, a.Gross, b.Gross)
	a.Refunds = add(t, a.Refunds, b.Refunds)
	a.Net = add(t, a.Net, b.Net)
	a.Commission = add(t, a.Commission, b.Commission)
}

// totals is a day's figures from its counts and amounts in minor units;
// commission is 8% of gross minus 8% of refunds (rounded down).
func totals(purchases, refunds, gross, refunded int64) statement.Totals {
	return statement.Totals{
		PurchaseCount: purchases, RefundCount: refunds,
		Gross: money.TotalOf(gross), Refunds: money.TotalOf(refunded), Net: money.TotalOf(gross - refunded),
		Commission: money.TotalOf(gross*8/100 - refunded*8/100),
	}
}

// legacy is s as a statement published before digests (LegacyChain).
func legacy(s *statement.Agency) *statement.Agency {
	s.LegacyChain = true
	return s
}

// realistic builds a draft statement of June 2026 in Europe/Paris: USD,
// JPY and BHD, activity on 30 days (JPY on fewer, one day a net refund),
// 3 prior-period adjustments and 720 hourly periods.
func realistic(t testing.TB, agency string) *statement.Agency {
	t.Helper()
	usd, jpy, bhd := currency(t, "USD"), currency(t, "JPY"), currency(t, "BHD")
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	s := &statement.Agency{
		Job: "billing-prod", AgencyID: agency, Month: "2026-06", Zone: "Europe/Paris",
		Status: statement.Draft, Revision: 3, ClosesAt: "2026-07-03T22:00:00Z",
	}
	for day := 1; day <= 30; day++ {
		date := time.Date(2026, 6, day, 0, 0, 0, 0, paris).Format("2006-01-02")
		d := int64(day)
		s.Days = append(s.Days, statement.Day{Date: date, Currency: bhd,
			Totals: totals(3+d%4, d%3/2, 125_500*(3+d%4)+d*17, 125_500*(d%3/2))})
		if day%3 != 0 {
			jt := totals(10+d%7, d%5/4, 18_000*(10+d%7), 18_000*(d%5/4))
			if day == 14 {
				jt = totals(1, 4, 9_000, 96_000) // a day of net refunds
			}
			s.Days = append(s.Days, statement.Day{Date: date, Currency: jpy, Totals: jt})
		}
		s.Days = append(s.Days, statement.Day{Date: date, Currency: usd,
			Totals: totals(40+(d*7)%23, d%4/3, 1999*(40+(d*7)%23)+d*101, 4999*(d%4/3))})
	}
	adj := []statement.Adjustment{
		{Period: hour(t, "2026-03-14T09:00:00Z"), Month: "2026-03", FromRevision: 1, ToRevision: 2, Reason: "recheck",
			Currency: usd, Totals: statement.Totals{PurchaseCount: 2, Gross: money.TotalOf(3998), Net: money.TotalOf(3998), Commission: money.TotalOf(319)}},
		{Period: hour(t, "2026-04-30T21:00:00Z"), Month: "2026-04", FromRevision: 2, ToRevision: 3, Reason: "backfill",
			Currency: jpy, Totals: statement.Totals{PurchaseCount: 1, Gross: money.TotalOf(18000), Net: money.TotalOf(18000), Commission: money.TotalOf(1440)}},
		{Period: hour(t, "2026-05-20T12:00:00Z"), Month: "2026-05", FromRevision: 1, ToRevision: 2, Reason: "verify --repair",
			Currency: usd, Totals: statement.Totals{RefundCount: 1, Refunds: money.TotalOf(4999), Net: money.TotalOf(-4999), Commission: money.TotalOf(-399)}},
	}
	for i := range adj {
		sum := sha256.Sum256(fmt.Appendf(nil, "digest %s rev %d", adj[i].Period.Name(), adj[i].ToRevision))
		adj[i].Digest = hex.EncodeToString(sum[:])
	}
	s.Adjustments = adj
	for _, c := range []money.Currency{bhd, jpy, usd} { // sorted by code
		l := statement.Line{Currency: c}
		for _, d := range s.Days {
			if d.Currency == c {
				addTotals(t, &l.Totals, d.Totals)
			}
		}
		for _, a := range adj {
			if a.Currency == c {
				l.PriorPeriodAdjustments = add(t, l.PriorPeriodAdjustments, a.Commission)
			}
		}
		l.CommissionDue = add(t, l.Commission, l.PriorPeriodAdjustments)
		s.Lines = append(s.Lines, l)
	}
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, paris).UTC()
	for h := range 720 {
		p := report.Period{Start: start.Add(time.Duration(h) * time.Hour), End: start.Add(time.Duration(h+1) * time.Hour)}
		key := "manifests/period=" + p.Name() + "/manifest.json"
		rev := 1 + h%7/6
		sum := sha256.Sum256(fmt.Appendf(nil, "%s rev %d", key, rev))
		digest := sha256.Sum256(fmt.Appendf(nil, "digest %s rev %d", key, rev))
		s.Periods = append(s.Periods, statement.PeriodRef{Period: p, Revision: rev, ManifestKey: key, ManifestSHA256: hex.EncodeToString(sum[:]),
			Digest: hex.EncodeToString(digest[:])})
	}
	return s
}

func hour(t testing.TB, start string) report.Period {
	t.Helper()
	s, err := time.Parse(time.RFC3339, start)
	if err != nil {
		t.Fatal(err)
	}
	return report.Period{Start: s, End: s.Add(time.Hour)}
}

// amounts is every amount and count string the statement renders.
func amounts(s *statement.Agency) []string {
	var out []string
	tot := func(c money.Currency, t statement.Totals) {
		out = append(out, fmt.Sprint(t.PurchaseCount), fmt.Sprint(t.RefundCount),
			c.FormatTotal(t.Gross), c.FormatTotal(t.Refunds), c.FormatTotal(t.Net), c.FormatTotal(t.Commission))
	}
	for _, l := range s.Lines {
		tot(l.Currency, l.Totals)
		out = append(out, l.Currency.FormatTotal(l.PriorPeriodAdjustments), l.Currency.FormatTotal(l.CommissionDue))
	}
	for _, d := range s.Days {
		tot(d.Currency, d.Totals)
	}
	for _, a := range s.Adjustments {
		tot(a.Currency, a.Totals)
	}
	return out
}

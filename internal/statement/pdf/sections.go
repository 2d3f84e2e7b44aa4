package pdf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// titleBlock writes page 1's head: what the document is, the agency, the
// month, the job, the status and the revision.
func (d *doc) titleBlock() {
	f := d.f
	f.SetXY(marginX, marginTop)
	d.font(familySans, "", 9)
	d.setText(colMuted)
	d.text(contentW, 5, "Monthly commission statement", "LM", false)
	f.Ln(5.5)

	// The agency id may be long or in any script: it wraps, never clips.
	id := printable(d.s.AgencyID)
	d.font(familySans, "B", 17)
	lineH := 7.5
	if len(f.SplitText(id, contentW-48)) > 3 { // up to 128 wide characters
		d.font(familySans, "B", 11)
		lineH = 5
	}
	d.setText(colText)
	f.SetX(marginX)
	f.MultiCell(contentW-48, lineH, id, "", "L", false)
	afterID := f.GetY()

	// The status stamp, top right.
	stampCol := colDraft
	if d.s.Status == statement.Final {
		stampCol = colFinal
	}
	d.setDraw(stampCol)
	d.setText(stampCol)
	f.SetLineWidth(0.6)
	f.Rect(pageW-marginX-44, marginTop+1, 44, 12, "D")
	f.SetLineWidth(0.2)
	d.font(familySans, "B", 15)
	f.SetXY(pageW-marginX-44, marginTop+1)
	d.text(44, 8, statusWord(d.s.Status), "CM", false)
	d.font(familySans, "", 7)
	f.SetXY(pageW-marginX-44, marginTop+8)
	d.text(44, 4.5, fmt.Sprintf("statement revision %d", d.s.Revision), "CM", false)
	d.setText(colText)

	f.SetY(max(afterID, marginTop+14) + 1)
	zone := d.s.Zone
	if zone == "" {
		zone = "UTC"
	}
	d.field("Month", fmt.Sprintf("%s (%s), days and periods in time zone %s", d.s.Month, d.month.Format("January 2006"), zone))
	d.field("Job", d.s.Job)
	d.field("Revision", fmt.Sprintf("statement revision %d of this month", d.s.Revision))
	switch d.s.Status {
	case statement.Final:
		d.field("Status", "FINAL: this statement is closed and will not change; a later restatement is booked in a later month as a prior-period adjustment")
	case statement.Draft:
		closes := d.s.ClosesAt
		if closes == "" {
			closes = "(not set)"
		}
		d.field("Status", "DRAFT: figures may still change until the month closes, at the latest "+closes)
	default:
		d.field("Status", statusWord(d.s.Status))
	}
	f.Ln(1)
	d.setDraw(colRule)
	f.Line(marginX, f.GetY(), pageW-marginX, f.GetY())
}

// field writes one "label: value" line of the title block.
func (d *doc) field(label, value string) {
	d.f.SetX(marginX)
	d.font(familySans, "B", 8.5)
	d.text(22, 4.6, label, "LM", false)
	d.font(familySans, "", 8.5)
	d.f.MultiCell(contentW-22, 4.6, printable(value), "", "L", false)
}

// The summary's columns: labels, then up to currenciesPerBlock currencies
// side by side (more continue in a block below), each at most
// currencyColW wide.
const (
	currenciesPerBlock = 5
	summaryLabelW      = 54.0
	currencyColW       = 33.0
)

// summary writes the totals per currency: one column per currency, one row
// per figure, the commission due last and in bold.
func (d *doc) summary() {
	d.heading("Totals per currency", 45)
	if len(d.s.Lines) == 0 {
		d.note("No activity in this month and no prior-period adjustments.")
		return
	}
	labels := []string{
		"Purchases (count)",
		"Refunds (count)",
		"Gross amount",
		"Refunded amount",
		"Net amount (gross − refunds)",
		"Commission, this month's periods",
		"Prior-period adjustments",
		"Commission due",
	}
	for start := 0; start < len(d.s.Lines); start += currenciesPerBlock {
		lines := d.s.Lines[start:min(start+currenciesPerBlock, len(d.s.Lines))]
		cols := []column{{"", summaryLabelW, "L"}}
		w := min(currencyColW, (contentW-summaryLabelW)/float64(len(lines)))
		for _, l := range lines {
			cols = append(cols, column{l.Currency.Code, w, "R"})
		}
		rows := make([][]string, len(labels))
		for i, lab := range labels {
			rows[i] = []string{lab}
		}
		for _, l := range lines {
			c := l.Currency
			for i, v := range []string{
				count(l.PurchaseCount), count(l.RefundCount),
				c.FormatTotal(l.Gross), c.FormatTotal(l.Refunds), c.FormatTotal(l.Net),
				c.FormatTotal(l.Commission), c.FormatTotal(l.PriorPeriodAdjustments),
				c.FormatTotal(l.CommissionDue),
			} {
				rows[i] = append(rows[i], v)
			}
		}
		d.tableRows(table{cols: cols, family: familySans, size: 8.5, rowH: 5}, rows,
			func(i int) (bool, bool) { return i == len(labels)-1, i%2 == 1 })
		d.f.Ln(2)
	}
	d.note("Amounts are in each currency's own units (ISO 4217 minor digits). " +
		"Commission due = commission of this month's own periods + prior-period adjustments " +
		"(restatements of periods of already final months, listed below).")
}

// days writes the day-by-day table.
func (d *doc) days() {
	d.heading("Day by day", 20)
	if len(d.s.Days) == 0 {
		d.note("No activity in this month's own periods.")
		return
	}
	d.note("Each day (in time zone " + orUTC(d.s.Zone) + ") with activity, per currency; the month's own periods only.")
	cols := []column{
		{"Date", 28, "L"}, {"Currency", 15, "L"}, {"Purchases", 16, "R"}, {"Refunds", 15, "R"},
		{"Gross", 28, "R"}, {"Refunded", 28, "R"}, {"Net", 28, "R"}, {"Commission", 28, "R"},
	}
	rows := make([][]string, len(d.s.Days))
	shaded := make([]bool, len(d.s.Days)) // every other date
	for i, day := range d.s.Days {
		c := day.Currency
		date := day.Date
		if t, err := time.Parse("2006-01-02", date); err == nil {
			date += " " + t.Format("Mon")
		}
		shaded[i] = i > 0 && (shaded[i-1] != (day.Date != d.s.Days[i-1].Date))
		rows[i] = []string{
			date, c.Code, count(day.PurchaseCount), count(day.RefundCount),
			c.FormatTotal(day.Gross), c.FormatTotal(day.Refunds), c.FormatTotal(day.Net), c.FormatTotal(day.Commission),
		}
	}
	d.tableRows(table{cols: cols, family: familySans, size: 8, rowH: 4.4}, rows,
		func(i int) (bool, bool) { return false, shaded[i] })
}

// adjustments writes the prior-period adjustment lines.
func (d *doc) adjustments() {
	d.heading("Prior-period adjustments", 20)
	if len(d.s.Adjustments) == 0 {
		d.note("None: no period of an already final month was restated.")
		return
	}
	d.note("A period of a month whose statement was already final was restated; the difference " +
		"(new revision − the revision billed before) is booked here, as a credit note would be: " +
		"a negative commission reduces the commission due, a positive one adds to it.")
	cols := []column{
		{"Period (UTC)", 34, "L"}, {"Month", 13, "L"}, {"Revision", 13, "L"}, {"Reason", 22, "L"},
		{"Cur.", 10, "L"}, {"Purch.", 11, "R"}, {"Refunds", 13, "R"},
		{"Gross", 18, "R"}, {"Refunded", 17, "R"}, {"Net", 17, "R"}, {"Commission", 18, "R"},
	}
	rows := make([][]string, len(d.s.Adjustments))
	for i, a := range d.s.Adjustments {
		c := a.Currency
		rows[i] = []string{
			periodText(a.Period), a.Month, fmt.Sprintf("%d → %d", a.FromRevision, a.ToRevision), a.Reason,
			c.Code, count(a.PurchaseCount), count(a.RefundCount),
			c.FormatTotal(a.Gross), c.FormatTotal(a.Refunds), c.FormatTotal(a.Net), c.FormatTotal(a.Commission),
		}
	}
	d.tableRows(table{cols: cols, family: familySans, size: 7, rowH: 4}, rows, zebra)
}

// auditChain writes every period the statement covers, its revision and
// its digest (report.ContentDigest: what the revision holds, its objects'
// sha256 and items fingerprint), then the restated periods its
// prior-period adjustments come from, in a compact monospaced table. A
// LegacyChain statement prints each period manifest's sha256 instead, as
// it was published.
func (d *doc) auditChain() {
	d.heading("Audit chain: the periods this statement covers", 25)
	if d.s.LegacyChain {
		d.legacyAuditChain()
		return
	}
	ps := d.s.Periods
	var adj []statement.PeriodRef // the restated periods of the adjustment lines, once each
	for _, a := range d.s.Adjustments {
		if n := len(adj); n > 0 && adj[n-1].Period == a.Period && adj[n-1].Revision == a.ToRevision {
			continue
		}
		adj = append(adj, statement.PeriodRef{Period: a.Period, Revision: a.ToRevision, Digest: a.Digest})
	}
	if len(ps) == 0 && len(adj) == 0 {
		d.note("No periods.")
		return
	}
	all := append(slices.Clone(ps), adj...)
	for i := range adj {
		all[len(ps)+i].ManifestKey = report.ManifestKey(adj[i].Period)
	}
	prefix, suffix, uniform := keyPattern(all)
	explain := fmt.Sprintf("The %d periods of %s this statement was built from, with the revision of each it includes and its "+
		"digest: the SHA-256 of what that revision holds (its files' SHA-256 and the fingerprint of its items, not when it "+
		"was published), which its manifest lists down to the items. ", len(ps), d.s.Month)
	if len(ps) == 0 {
		explain = fmt.Sprintf("No period of %s: this statement has prior-period adjustments only. Each period revision is named "+
			"with its digest: the SHA-256 of what that revision holds (its files' SHA-256 and the fingerprint of its items, "+
			"not when it was published), which its manifest lists down to the items. ", d.s.Month)
	}
	if len(adj) > 0 {
		explain += fmt.Sprintf("Then the %d restated period revisions of earlier months its prior-period adjustments come from (adj.). ", len(adj))
	}
	if uniform {
		explain += fmt.Sprintf("The manifest of a period is %s<period>%s.", prefix, suffix)
	}
	d.note(explain)
	cols := []column{{"#", 10, "R"}, {"Period (UTC)", 34, "L"}}
	if uniform {
		cols = append(cols, column{"Period", 25, "L"})
	} else {
		cols = append(cols, column{"Manifest", 48, "L"})
	}
	cols = append(cols, column{"Rev.", 9, "R"}, column{"Digest (SHA-256 of the period's content)", 186 - width(cols) - 9, "L"})
	rows := make([][]string, len(all))
	for i, p := range all {
		name := p.ManifestKey
		if uniform {
			name = p.Period.Name()
		}
		n := strconv.Itoa(i + 1)
		if i >= len(ps) {
			n = "adj."
		}
		rows[i] = []string{n, periodText(p.Period), name, strconv.Itoa(p.Revision), p.Digest}
	}
	d.tableRows(table{cols: cols, family: familyMono, size: 6.5, rowH: 3.1}, rows, zebra)
}

// legacyAuditChain is the audit chain of a statement published before
// digests: every period with its manifest's sha256 (the same bytes again).
func (d *doc) legacyAuditChain() {
	ps := d.s.Periods
	if len(ps) == 0 {
		d.note("No periods.")
		return
	}
	prefix, suffix, uniform := keyPattern(ps)
	explain := fmt.Sprintf("The %d periods of %s this statement was built from, with the revision of each it includes and the "+
		"SHA-256 of that revision's manifest, which lists the period's files and their own SHA-256 down to the items. ",
		len(ps), d.s.Month)
	if uniform {
		explain += fmt.Sprintf("The manifest of a period is %s<period>%s.", prefix, suffix)
	}
	d.note(explain)
	cols := []column{{"#", 10, "R"}, {"Period (UTC)", 34, "L"}}
	if uniform {
		cols = append(cols, column{"Period", 25, "L"})
	} else {
		cols = append(cols, column{"Manifest", 48, "L"})
	}
	cols = append(cols, column{"Rev.", 9, "R"}, column{"Manifest SHA-256", 186 - width(cols) - 9, "L"})
	rows := make([][]string, len(ps))
	for i, p := range ps {
		name := p.ManifestKey
		if uniform {
			name = p.Period.Name()
		}
		rows[i] = []string{strconv.Itoa(i + 1), periodText(p.Period), name, strconv.Itoa(p.Revision), p.ManifestSHA256}
	}
	d.tableRows(table{cols: cols, family: familyMono, size: 6.5, rowH: 3.1}, rows, zebra)
}

// keyPattern reports whether every period's manifest key is prefix +
// Period.Name() + suffix, the same prefix and suffix for all.
func keyPattern(ps []statement.PeriodRef) (prefix, suffix string, ok bool) {
	for i, p := range ps {
		pre, suf, found := strings.Cut(p.ManifestKey, p.Period.Name())
		if !found || (i > 0 && (pre != prefix || suf != suffix)) {
			return "", "", false
		}
		prefix, suffix = pre, suf
	}
	return prefix, suffix, true
}

// periodText is a period in UTC, compact: "2024-05-01 13:00–14:00",
// "2024-05-01 00:00–24:00", or both ends in full when they are further
// apart.
func periodText(p report.Period) string {
	s, e := p.Start.UTC(), p.End.UTC()
	const day = "2006-01-02"
	head := s.Format(day + " 15:04")
	switch {
	case s.Format(day) == e.Format(day):
		return head + "–" + e.Format("15:04")
	case e.Equal(time.Date(s.Year(), s.Month(), s.Day()+1, 0, 0, 0, 0, time.UTC)):
		return head + "–24:00"
	}
	return head + "–" + e.Format(day+" 15:04")
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

func orUTC(zone string) string {
	if zone == "" {
		return "UTC"
	}
	return zone
}

// commissionOf is a Total as a float64, for drawing only (a bar's height):
// never for arithmetic on money.
func commissionOf(t money.Total) float64 {
	v, _ := strconv.ParseFloat(t.String(), 64)
	return v
}

package pdf

import (
	"bytes"
	"strings"

	"github.com/go-pdf/fpdf"

	"github.com/reportjob/reportjob/internal/statement"
)

// Page 1's geometry, in millimetres.
const (
	stampW, stampH = 44.0, 12.0
	logoMaxW       = 40.0
	logoH          = 14.0
	partyGap       = 8.0
	partyW         = (contentW - partyGap) / 2
)

// page1 writes who bills whom, the document's facts, the amount due per
// currency in words, the payment instructions, the totals and the
// commission per rate.
func (d *sheet) page1() {
	f := d.f
	doc := d.s.Doc
	// The logo, the title and the status stamp.
	x := marginX
	if len(doc.Logo) > 0 {
		info := f.RegisterImageOptionsReader("logo", fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(doc.Logo))
		if f.Ok() && info != nil && info.Height() > 0 {
			w := min(logoMaxW, logoH*info.Width()/info.Height())
			f.ImageOptions("logo", marginX, marginTop, w, 0, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
			x += w + 4
		} else {
			f.ClearError() // a logo that is not a PNG is left out, never an error
		}
	}
	d.font(familyDoc, "B", 17)
	d.text(colText)
	f.SetXY(x, marginTop)
	d.cell(pageW-marginX-stampW-2-x, 8, d.l.T("doc.title"), "L", false)
	d.font(familyDoc, "", 10)
	f.SetXY(x, marginTop+8)
	d.cell(pageW-marginX-stampW-2-x, 6, d.l.T("doc.number")+" "+doc.Number, "L", false)
	d.stamp()

	// From and To.
	top := marginTop + logoH + 4
	d.draw(colRule)
	f.Line(marginX, top-2, pageW-marginX, top-2)
	iss := doc.Issuer
	from := d.party(marginX, top, d.l.T("doc.from"), iss, []string{
		labelled(d.l.T("doc.tax_id"), iss.TaxID), labelled(d.l.T("doc.contact"), iss.Contact)}, d.issuerName(), false)
	rec := doc.Recipient
	lines := []string{labelled(d.l.T("doc.tax_id"), rec.TaxID), labelled(d.l.T("doc.agency_id"), d.s.AgencyID)}
	if !doc.Listed {
		lines = append(lines, d.l.T("doc.unlisted"))
	}
	to := d.party(marginX+partyW+partyGap, top, d.l.T("doc.to"), rec, lines, d.name(rec.LegalName), true)
	f.SetY(max(from, to) + 2)

	d.facts()
	d.amountsDue()
	d.instructions()
	d.summary()
	d.rates()
}

// issuerName is the issuer's legal name as printed: "" (left out) when it
// cannot be printed (see needsShaping).
func (d *sheet) issuerName() string {
	if n := strings.TrimSpace(d.s.Doc.Issuer.LegalName); !d.unprintable(n) {
		return n
	}
	return ""
}

// labelled is "label value", or "" when value is empty.
func labelled(label, value string) string {
	if strings.TrimSpace(value) == "" {
		return ""
	}
	return label + " " + value
}

// stamp draws the status stamp, top right.
func (d *sheet) stamp() {
	f := d.f
	col := colDraft
	if d.s.Status == statement.Final {
		col = colFinal
	}
	d.draw(col)
	d.text(col)
	f.SetLineWidth(0.6)
	f.Rect(pageW-marginX-stampW, marginTop+1, stampW, stampH, "D")
	f.SetLineWidth(0.2)
	d.font(familyDoc, "B", 15)
	f.SetXY(pageW-marginX-stampW, marginTop+1)
	d.cell(stampW, stampH, d.statusWord(), "C", false)
	d.text(colText)
}

// party writes one party's block at (x, y), partyW wide: a label, shown
// (the legal name as printed, in bold, large for the recipient), the
// address, the country and extra lines (empty ones left out, and those
// that cannot be printed: see needsShaping). It returns the y below the
// block.
func (d *sheet) party(x, y float64, label string, p statement.Party, extra []string, shown string, large bool) float64 {
	f := d.f
	d.auto = true
	defer func() { d.auto = false }()
	f.SetXY(x, y)
	d.font(familyDoc, "B", 7.5)
	d.text(colMuted)
	d.cell(partyW, 4, strings.ToUpper(label), "L", false)
	f.SetXY(x, y+4.5)
	d.text(colText)
	if shown != "" {
		d.font(familyDoc, "B", 10)
		if large {
			d.font(familyDoc, "B", 11)
		}
		d.para(x, partyW, 5, shown)
	}
	d.font(familyDoc, "", 8.5)
	lines := append([]string(nil), p.Address...)
	if p.Country != "" {
		lines = append(lines, p.Country)
	}
	for _, l := range append(lines, extra...) {
		for _, part := range strings.Split(l, "\n") {
			if strings.TrimSpace(part) == "" || d.unprintable(part) {
				continue
			}
			d.para(x, partyW, 4, part)
		}
	}
	return f.GetY()
}

// facts writes the band of the document's facts: number, month, issue
// date (a draft's "as of"), due date and payment terms.
func (d *sheet) facts() {
	f := d.f
	doc := d.s.Doc
	issue := d.l.T("doc.issue_date")
	if d.s.Status != statement.Final {
		issue = d.l.T("doc.as_of")
	}
	facts := [][2]string{
		{d.l.T("doc.number"), doc.Number},
		{d.l.T("doc.month"), d.l.Month(d.s.Month)},
		{issue, d.l.Date(doc.IssueDate)},
		{d.l.T("doc.due_date"), d.l.Date(doc.DueDate)},
		{d.l.T("doc.terms"), d.terms()},
	}
	d.ensure(12 + 2*3.4 + 1)
	y := f.GetY()
	w := contentW / float64(len(facts))
	d.fill(colHeadFill)
	f.Rect(marginX, y, contentW, 11, "F")
	for i, kv := range facts {
		f.SetXY(marginX+float64(i)*w, y+0.8)
		d.font(familyDoc, "", 7)
		d.text(colMuted)
		d.cell(w, 4, kv[0], "L", false)
		f.SetXY(marginX+float64(i)*w, y+5)
		d.font(familyDoc, "B", 9)
		d.text(colText)
		d.cell(w, 5, kv[1], "L", false)
	}
	f.SetXY(marginX, y+12)
	if d.s.Status == statement.Final {
		d.note(d.l.T("doc.final_note"))
	} else {
		d.note(d.l.T("doc.draft_note", "date", d.l.Date(doc.IssueDate), "closes", d.instant(d.s.ClosesAt)))
	}
}

// terms is the payment terms as printed: "Net 30 days", or "Due on
// receipt" for terms of 0 days.
func (d *sheet) terms() string {
	if d.s.Doc.PaymentTermsDays == 0 {
		return d.l.T("doc.terms_immediate")
	}
	return d.tn("doc.terms_days", d.s.Doc.PaymentTermsDays)
}

// nothingToPay reports whether no currency has commission due above zero
// (every one a credit or zero): page 1 then prints neither the payment
// instructions nor the number to quote with a payment.
func (d *sheet) nothingToPay() bool {
	for _, l := range d.s.Lines {
		if l.CommissionDue.Sign() > 0 {
			return false
		}
	}
	return true
}

// instant is an RFC 3339 instant as the locale writes its day, with the
// time of day in the statement's zone ("" stays "").
func (d *sheet) instant(ts string) string {
	t, err := parseInstant(ts)
	if err != nil {
		return ts
	}
	t = t.In(d.zone)
	return d.l.Date(t.Format("2006-01-02")) + " " + t.Format("15:04") + " (" + d.zone.String() + ")"
}

// amountsDue writes, per currency, who pays whom how much and by when.
func (d *sheet) amountsDue() {
	f := d.f
	doc := d.s.Doc
	agency := strings.TrimSpace(d.name(doc.Recipient.LegalName))
	issuer := d.issuerName()
	if issuer == "" {
		issuer = "—"
	}
	var lines []string
	for _, l := range d.s.Lines {
		c, due := l.Currency, l.CommissionDue
		switch due.Sign() {
		case 1:
			lines = append(lines, d.l.T("doc.owes", "payer", agency, "payee", issuer, "amount", d.l.Money(c, due), "date", d.l.Date(doc.DueDate)))
		case -1:
			// The catalogs name the roles as in doc.owes (the agency pays
			// the issuer) and say that the payee owes the payer.
			lines = append(lines, d.l.T("doc.credit", "payer", agency, "payee", issuer, "amount", d.l.Money(c, due.Neg())))
		default:
			lines = append(lines, d.l.T("doc.nothing_due", "currency", c.Code))
		}
	}
	if len(lines) == 0 {
		lines = append(lines, d.l.T("doc.nothing_due", "currency", "—"))
	}
	// One shaded box per page: a sentence is never split across pages.
	d.font(familyDoc, "B", 10)
	const pad = 1.5
	for i := 0; i < len(lines); {
		y := f.GetY() + 1
		if y+2*pad+d.sentenceH(lines[i]) > bodyBottom {
			d.newPage()
			y = f.GetY() + 1
		}
		h, j := 0.0, i
		for ; j < len(lines); j++ {
			sh := d.sentenceH(lines[j])
			if j > i && y+2*pad+h+sh > bodyBottom {
				break
			}
			h += sh
		}
		d.fill(colZebra)
		f.Rect(marginX, y, contentW, h+2*pad, "F")
		d.fill(colBarPos)
		f.Rect(marginX, y, 1.2, h+2*pad, "F")
		f.SetY(y + pad)
		for _, s := range lines[i:j] {
			d.para(marginX+4, contentW-8, 5, s)
		}
		f.SetY(y + h + 2*pad + 1)
		if i = j; i < len(lines) {
			d.newPage()
		}
	}
}

// sentenceH is the height of an amount-due sentence, wrapped, in the
// current font.
func (d *sheet) sentenceH(s string) float64 {
	return 5 * float64(len(d.wrap(s, contentW-8-2*cellMargin)))
}

// instructions writes the issuer's payment instructions and the reference
// to quote.
func (d *sheet) instructions() {
	if d.nothingToPay() {
		return
	}
	doc := d.s.Doc
	d.font(familyDoc, "B", 8.5)
	d.ensure(4.6 + 4.2)
	d.f.SetX(marginX)
	d.cell(contentW, 4.6, d.l.T("doc.payment_instructions"), "L", false)
	d.f.Ln(4.6)
	d.font(familyDoc, "", 8.5)
	for _, line := range strings.Split(doc.PaymentInstructions, "\n") {
		if strings.TrimSpace(line) != "" && !d.unprintable(line) {
			d.para(marginX, contentW, 4.2, line)
		}
	}
	d.font(familyDoc, "B", 8.5)
	d.para(marginX, contentW, 4.2, d.l.T("doc.quote_reference", "number", doc.Number))
}

// summary writes the totals per currency: one column per currency (up to
// currenciesPerBlock side by side), one row per figure, the commission due
// last and in bold.
func (d *sheet) summary() {
	d.heading(d.l.T("sec.summary"), 45)
	if len(d.s.Lines) == 0 {
		return
	}
	labels := []string{"col.purchases", "col.refunds", "col.gross", "col.refund_amount", "col.net",
		"col.commission", "col.adjustments", "col.due"}
	for start := 0; start < len(d.s.Lines); start += currenciesPerBlock {
		lines := d.s.Lines[start:min(start+currenciesPerBlock, len(d.s.Lines))]
		cols := []column{{d.l.T("col.currency"), summaryLabelW, "L"}}
		w := min(currencyColW, (contentW-summaryLabelW)/float64(len(lines)))
		for _, l := range lines {
			cols = append(cols, column{l.Currency.Code, w, "R"})
		}
		rows := make([][]string, len(labels))
		for i, lab := range labels {
			rows[i] = []string{d.l.T(lab)}
		}
		for _, l := range lines {
			c := l.Currency
			for i, v := range []string{
				d.l.Int(l.PurchaseCount), d.l.Int(l.RefundCount),
				d.l.Amount(c, l.Gross), d.l.Amount(c, l.Refunds), d.l.Amount(c, l.Net),
				d.l.Amount(c, l.Commission), d.l.Amount(c, l.PriorPeriodAdjustments), d.l.Amount(c, l.CommissionDue),
			} {
				rows[i] = append(rows[i], v)
			}
		}
		t := table{cols: cols, family: familyDoc, size: 8.5, rowH: 5}
		d.ensure(d.headerH(t) + float64(len(rows))*t.rowH) // a block is never split
		d.table(t, rows, func(i int) (bool, bool) { return i == len(labels)-1, i%2 == 1 })
		d.f.Ln(2)
	}
}

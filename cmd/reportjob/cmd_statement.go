package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/delivery"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/statement"
)

// statementSummary is statement's JSON summary line.
type statementSummary struct {
	Command           string   `json:"command"`
	Job               string   `json:"job"`
	Status            string   `json:"status"` // ok | not_found (exit 2) | failed | lease_held | bad_usage
	Month             string   `json:"month,omitempty"`
	StatementStatus   string   `json:"statement_status,omitempty"` // draft | final
	StatementRevision int      `json:"statement_revision,omitempty"`
	ClosesAt          string   `json:"closes_at,omitempty"`
	Agencies          int      `json:"agencies"`
	Adjustments       int      `json:"prior_period_adjustments"`
	Manifest          string   `json:"manifest,omitempty"`
	Agency            string   `json:"agency_id,omitempty"`        // with --number: whose statement it is
	Number            string   `json:"statement_number,omitempty"` // with --agency or --number
	Files             []string `json:"files,omitempty"`
	Closed            bool     `json:"closed,omitempty"`
	// Delivery is what statement --send / --resend sent.
	Delivery *deliverySummary `json:"delivery,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// statementLine is one line of statement --json.
type statementLine struct {
	Month                  string `json:"month"`
	Status                 string `json:"status"`
	AgencyID               string `json:"agency_id"`
	Currency               string `json:"currency"`
	PurchaseCount          int64  `json:"purchase_count"`
	RefundCount            int64  `json:"refund_count"`
	Net                    string `json:"net_amount"`
	Commission             string `json:"commission_amount"`
	PriorPeriodAdjustments string `json:"prior_period_adjustments"`
	CommissionDue          string `json:"commission_due"`
	StatementRevision      int32  `json:"statement_revision"`
	StatementNumber        string `json:"statement_number,omitempty"` // none in a month published before numbers
}

func cmdStatement(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "statement")
	month := fs.String("month", "", "the month, YYYY-MM in statements.timezone (default: the latest with a statement)")
	agency := fs.String("agency", "", "only this agency, and list its files")
	asJSON := fs.Bool("json", false, "one JSON object per line instead of the table")
	closeM := fs.Bool("close", false, "finalise --month now, before statements.close_after (takes the lease)")
	send := fs.Bool("send", false, "e-mail the final statements not sent yet (of --month, --agency when given; takes the lease)")
	resend := fs.Bool("resend", false, "e-mail --month's final statements again on purpose, as new messages (--agency: only that one)")
	number := fs.String("number", "", "the statement with this number (PREFIX-YYYYMM-NNNNNN): its month and agency")
	var now timeFlag
	fs.Var(&now, "now", "fix the report clock (replay and tests)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sum := statementSummary{Command: "statement", Job: c.cfg.JobName, Month: *month}
	var err error
	if *number != "" {
		*month, err = c.numberMonth(*number, *month, *agency, *closeM)
		sum.Month = *month
	}
	switch {
	case err != nil:
	case *send || *resend:
		if *number != "" {
			err = usagef("statement: --number goes without --send and --resend (use --month and --agency)")
		} else {
			err = c.statementSend(ctx, &sum, *month, *agency, *resend, *closeM)
		}
	default:
		err = c.statement(ctx, &sum, *month, *agency, *number, *asJSON, *closeM, now.t)
	}
	err = cutShort(ctx, err, "run the same command again")
	sum.Status = "ok"
	if err != nil {
		sum.Status, sum.Error = failureStatus(err), err.Error()
	}
	c.printJSON(sum)
	return err
}

func (c *cli) statement(ctx context.Context, sum *statementSummary, month, agency, number string, asJSON, closeM bool, now time.Time) error {
	if closeM && month == "" {
		return usagef("statement --close needs --month")
	}
	if month != "" {
		if _, _, err := statement.Bounds(month, c.cfg.Statements.Location); err != nil {
			return usagef("statement --month: %v", err)
		}
	}
	st, err := openStoreToRead(ctx, c, !closeM)
	if err != nil {
		return err
	}
	defer st.close()
	b, err := openBucket(ctx, c)
	if err != nil {
		return err
	}
	defer b.Close()
	j := c.newJob(st, b, nil)
	if closeM {
		res, err := j.Close(ctx, monthCloseOptions(month, now))
		if err != nil {
			return err
		}
		sum.Closed = res.Closed > 0
	}
	dir, err := j.Scratch("statement")
	if err != nil {
		return err
	}
	defer dir.Close()
	rd := j.Reader(dir.Path)
	if month == "" {
		ms, err := rd.Months(ctx)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return notFoundf("statement: %w in %s yet: a run publishes the statements of the months it delivers", monthclose.ErrNoStatement, sinkURL(c.cfg))
		}
		month = ms[len(ms)-1]
		sum.Month = month
	}
	s, err := rd.Read(ctx, month)
	if errors.Is(err, monthclose.ErrNoStatement) && number != "" {
		return notFoundf("statement --number %s: %w with this number: its month %s has none (months with one: %s)", number, err, month, c.statementMonths(ctx, rd))
	}
	if errors.Is(err, monthclose.ErrNoStatement) {
		return notFoundf("statement --month %s: %w (months with one: %s)", month, err, c.statementMonths(ctx, rd))
	}
	if err != nil {
		return err
	}
	m := s.Manifest
	if number != "" {
		if agency, err = numberAgency(m, number); err != nil {
			return err
		}
		sum.Agency = agency
	}
	sum.StatementStatus, sum.StatementRevision = m.Status, m.StatementRevision
	if !m.Final() {
		sum.ClosesAt = m.ClosesAt.UTC().Format(time.RFC3339)
	}
	sum.Adjustments = len(m.Adjustments)
	sum.Manifest = sinkURL(c.cfg) + "/" + "manifests/month=" + month + "/manifest.json"
	agencies := map[string]bool{}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !asJSON {
		fmt.Fprintf(c.stdout, "statements of %s (%s), %s, statement revision %d", month, m.Timezone, strings.ToUpper(m.Status), m.StatementRevision)
		if !m.Final() {
			fmt.Fprintf(c.stdout, ", final at the latest after %s", m.ClosesAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(c.stdout, "\n\n")
		fmt.Fprintln(tw, "agency\tcurrency\tpurchases\trefunds\tnet\tcommission\tadjustments\tcommission due\t")
	}
	for _, r := range s.Rows {
		if agency != "" && r.AgencyID != agency {
			continue
		}
		agencies[r.AgencyID] = true
		cur := r.Currency
		if asJSON {
			c.printLine(statementLine{Month: r.Month, Status: r.Status, AgencyID: r.AgencyID, Currency: cur.Code,
				PurchaseCount: r.PurchaseCount, RefundCount: r.RefundCount, Net: cur.FormatTotal(r.Net),
				Commission: cur.FormatTotal(r.Commission), PriorPeriodAdjustments: cur.FormatTotal(r.PriorPeriodAdjustments),
				CommissionDue: cur.FormatTotal(r.CommissionDue), StatementRevision: r.StatementRevision, StatementNumber: r.StatementNumber})
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", clip(r.AgencyID, 24), cur.Code, r.PurchaseCount, r.RefundCount,
			cur.FormatTotal(r.Net), cur.FormatTotal(r.Commission), cur.FormatTotal(r.PriorPeriodAdjustments), cur.FormatTotal(r.CommissionDue))
	}
	if !asJSON {
		tw.Flush()
		if len(m.Adjustments) > 0 {
			fmt.Fprintf(c.stdout, "\nprior-period adjustments booked in %s:\n", month)
			for _, a := range m.Adjustments {
				var cs []string
				for _, x := range a.Commission {
					cs = append(cs, x.Amount+" "+x.Currency)
				}
				fmt.Fprintf(c.stdout, "  period %s (%s) revision %d -> %d (%s): commission %s\n", a.PeriodStart.UTC().Format("2006-01-02T15:04Z"),
					a.PeriodMonth, a.FromRevision, a.ToRevision, a.Reason, strings.Join(cs, ", "))
			}
		}
	}
	sum.Agencies = len(agencies)
	if agency != "" {
		if len(agencies) == 0 {
			return notFoundf("statement --agency %q: %w for agency %q in %s (%d agencies have one)", agency, monthclose.ErrNoStatement, agency, month, statementAgencies(s))
		}
		sum.Number = agencyNumber(m, agency)
		if !asJSON && sum.Number != "" {
			fmt.Fprintf(c.stdout, "statement number: %s\n", sum.Number)
		}
		for _, k := range monthclose.AgencyFiles(m, agency) {
			sum.Files = append(sum.Files, sinkURL(c.cfg)+"/"+k)
			if !asJSON {
				fmt.Fprintf(c.stdout, "file: %s/%s\n", sinkURL(c.cfg), k)
			}
		}
	}
	return nil
}

// statementMonths says which months have a statement, for the answer to a
// --month that has none: "none yet", one month, or "FIRST to LAST (N)".
func (c *cli) statementMonths(ctx context.Context, rd *monthclose.Closer) string {
	ms, err := rd.Months(ctx)
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case len(ms) == 0:
		return "none yet"
	case len(ms) == 1:
		return ms[0]
	}
	return fmt.Sprintf("%s to %s, %d", ms[0], ms[len(ms)-1], len(ms))
}

// statementAgencies counts the agencies of a month's statement.
func statementAgencies(s *monthclose.Statement) int {
	seen := map[string]bool{}
	for _, r := range s.Rows {
		seen[r.AgencyID] = true
	}
	return len(seen)
}

// clip shortens s to n characters for a table cell.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func monthCloseOptions(month string, now time.Time) job.CloseOptions {
	return job.CloseOptions{Month: month, Now: now}
}

// statementSend e-mails what is due (--send) or resends a month (--resend).
func (c *cli) statementSend(ctx context.Context, sum *statementSummary, month, agency string, resend, closeM bool) error {
	switch {
	case closeM:
		return usagef("statement: --close goes without --send and --resend (a run, or statement --send, sends after the close)")
	case resend && month == "":
		return usagef("statement --resend needs --month")
	case !c.cfg.Delivery.Email.Enabled():
		return usagef("statement --send/--resend: delivery.email.host is not set (docs/delivery.md)")
	}
	if month != "" {
		if _, _, err := statement.Bounds(month, c.cfg.Statements.Location); err != nil {
			return usagef("statement --month: %v", err)
		}
		if since := c.cfg.Delivery.Since; !resend && since != "" && month < since {
			return usagef("statement --send --month %s: the month is before delivery.since (%s), whose months are never delivered: set delivery.since to %s or earlier to send it", month, since, month)
		}
	}
	res, err := c.deliverOnDemand(ctx, delivery.Options{MailOnly: true, Month: month, Agency: agency, Resend: resend})
	sum.Delivery = summarize(res, nil)
	if err != nil {
		return err
	}
	if resend && res.Resent == 0 && res.Failed == 0 {
		return notFoundf("statement --resend --month %s: no statement of that month was e-mailed yet%s", month, map[bool]string{true: " to agency " + agency}[agency != ""])
	}
	if res.Failed > 0 && resend {
		return fmt.Errorf("%d statement e-mail(s) could not be resent (a resend is not tried again: run statement --resend again): first: %s: %s", res.Failed, res.Failures[0].Target, res.Failures[0].Error)
	}
	if res.Failed > 0 {
		return fmt.Errorf("%d statement e-mail(s) failed (later runs try again): first: %s: %s", res.Failed, res.Failures[0].Target, res.Failures[0].Error)
	}
	return nil
}

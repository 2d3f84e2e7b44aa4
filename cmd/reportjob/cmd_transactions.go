package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	lookups "github.com/reportjob/reportjob/internal/lookup"
	"github.com/reportjob/reportjob/internal/report"
)

// Look-ups in the delivered record (SPEC section 8; package lookup):
// `transactions --agency A`, `transactions --id TX` and `rejects`.

// lookupSummary is the JSON line the look-ups end with.
type lookupSummary struct {
	Command    string   `json:"command"`
	Job        string   `json:"job"`
	Status     string   `json:"status"` // ok | not_found | failed | bad_usage
	Agency     string   `json:"agency,omitempty"`
	ID         string   `json:"id,omitempty"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	Rows       *int     `json:"lines,omitempty"`
	RejectRows *int     `json:"rejects,omitempty"`
	Billed     *int     `json:"billed,omitempty"`
	Dropped    *int     `json:"dropped,omitempty"`
	InIndex    *bool    `json:"in_index,omitempty"`
	Restated   []string `json:"restated,omitempty"`
	// NoLineItems are the periods read whose lines could not be listed:
	// they billed the agency (or the id) but delivered no line items.
	NoLineItems []string `json:"periods_without_line_items,omitempty"`
	// NextCursor continues the listing; "" when it is done.
	NextCursor  *string `json:"next_cursor,omitempty"`
	PeriodsRead int     `json:"periods_read"`
	Gets        int64   `json:"objects_read"`
	Lists       int64   `json:"lists"`
	Note        string  `json:"note,omitempty"`
	DurationMS  int64   `json:"duration_ms"`
	Error       string  `json:"error,omitempty"`
}

// lookupFlags are the flags of the listings.
type lookupFlags struct {
	from, to timeFlag
	limit    *int
	cursor   *string
	asJSON   *bool
}

func addLookupFlags(fs *flag.FlagSet) *lookupFlags {
	var f lookupFlags
	fs.Var(&f.from, "from", "only the periods from T (the period that holds T on)")
	fs.Var(&f.to, "to", "only the periods that start before T")
	f.limit = fs.Int("limit", lookups.DefaultLimit, "rows per page")
	f.cursor = fs.String("cursor", "", "continue after the last row of a page (its next_cursor)")
	f.asJSON = fs.Bool("json", false, "print JSON Lines instead of a table")
	return &f
}

// openLookup opens the store and the sink and returns a Reader of the
// delivered periods that start in [from, to): to defaults to the
// checkpoint, from to the first period; from is rounded down to its
// period's start. close closes the store.
func (c *cli) openLookup(ctx context.Context, from, to time.Time) (r *lookups.Reader, st *store, b *bucket, err error) {
	st, err = openStoreToRead(ctx, c, true)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	b, err = openBucket(ctx, c)
	if err != nil {
		return nil, nil, nil, err
	}
	state, err := st.Load(ctx, c.cfg.JobName)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load checkpoint: %w", err)
	}
	r = &lookups.Reader{Objects: b.Bucket}
	grid := report.NewGrid(state, c.cfg.Report.Start, c.cfg.Report.Period)
	first, ferr := grid.First()
	if errors.Is(ferr, report.ErrNoStart) || state.Checkpoint.IsZero() {
		return r, st, b, nil // nothing delivered yet
	}
	if from.IsZero() || from.Before(first) {
		from = first
	}
	if p, ok := grid.At(from); ok {
		from = p.Start
	}
	if to.IsZero() || to.After(state.Checkpoint) {
		to = state.Checkpoint
	}
	r.Periods = grid.Between(from, to)
	return r, st, b, nil
}

func cmdTransactions(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "transactions")
	agency := fs.String("agency", "", "the agency whose billed lines to list, newest first")
	id := fs.String("id", "", "instead of --agency: where one transaction id was billed, dropped or rejected")
	lf := addLookupFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case (*agency == "") == (*id == ""):
		return usagef("transactions needs --agency A or --id TX (one of them)")
	case *lf.limit <= 0:
		return usagef("transactions --limit %d: want a positive number", *lf.limit)
	case *id != "" && *lf.cursor != "":
		return usagef("transactions --id takes no --cursor")
	case !lf.from.t.IsZero() && !lf.to.t.IsZero() && !lf.to.t.After(lf.from.t):
		return usagef("transactions: --to %s must be after --from %s", lf.to.String(), lf.from.String())
	}
	if *id != "" {
		return c.transactionByID(ctx, *id, lf)
	}
	started := time.Now()
	sum := lookupSummary{Command: "transactions", Job: c.cfg.JobName, Agency: *agency, From: lf.from.String(), To: lf.to.String()}
	r, st, _, err := c.openLookup(ctx, lf.from.t, lf.to.t)
	if err != nil {
		return err
	}
	defer st.close()
	pg, err := r.Transactions(ctx, lookups.Query{Agency: *agency, Limit: *lf.limit, Cursor: *lf.cursor})
	if err != nil {
		return err
	}
	if *lf.asJSON {
		for i := range pg.Rows {
			c.printLine(lineJSON(&pg.Rows[i]))
		}
	} else {
		printLineTable(c.stdout, pg.Rows)
		if len(pg.Rows) == 0 {
			fmt.Fprintf(c.stdout, "no lines of agency %q in the periods read\n", *agency)
		}
		for _, nl := range pg.WithoutLineItems {
			fmt.Fprintf(c.stdout, "period %s revision %d billed %d transaction(s) of agency %q but delivered no line items (report.line_items was false): its lines cannot be listed; its summary has the totals\n",
				nl.Period.Name(), nl.Revision, nl.Transactions, *agency)
		}
		for _, p := range pg.Restated {
			fmt.Fprintf(c.stdout, "period %s was restated since the cursor was made: this page goes on with its new revision\n", p.Name())
		}
		if pg.Next != "" {
			fmt.Fprintf(c.stdout, "more: %s transactions --agency %s --limit %d --cursor %s\n", c.invocation(), quoteArg(*agency), *lf.limit, pg.Next)
		}
	}
	n := len(pg.Rows)
	sum.Rows, sum.NextCursor, sum.PeriodsRead = &n, &pg.Next, pg.Periods
	for _, p := range pg.Restated {
		sum.Restated = append(sum.Restated, p.Name())
	}
	for _, nl := range pg.WithoutLineItems {
		sum.NoLineItems = append(sum.NoLineItems, nl.Period.Name())
	}
	if len(sum.NoLineItems) > 0 {
		sum.Note = fmt.Sprintf("%d period(s) read billed the agency without line items (report.line_items was false): their lines cannot be listed, their summaries have the totals", len(sum.NoLineItems))
	}
	sum.Gets, sum.Lists = r.Requests()
	sum.Status = "ok"
	sum.DurationMS = time.Since(started).Milliseconds()
	c.printJSON(sum)
	return nil
}

// lineRow is a billed line as JSON.
type lineRow struct {
	Period        string `json:"period"`
	Revision      int    `json:"revision"`
	TransactionID string `json:"transaction_id"`
	AgencyID      string `json:"agency_id"`
	CustomerID    string `json:"customer_id,omitempty"`
	ProductID     string `json:"product_id,omitempty"`
	Kind          string `json:"kind"`
	Currency      string `json:"currency"`
	Amount        string `json:"amount"`
	Commission    string `json:"commission_amount"`
	BPS           int32  `json:"commission_bps"`
	RecordedAt    string `json:"recorded_at"`
	PartitionKey  string `json:"partition_key"`
	SortKey       string `json:"sort_key"`
	Object        string `json:"object"`
}

func lineJSON(l *lookups.Line) lineRow {
	tx := &l.Tx
	return lineRow{
		Period: l.Period.Name(), Revision: l.Revision, TransactionID: tx.ID, AgencyID: tx.AgencyID,
		CustomerID: tx.CustomerID, ProductID: tx.ProductID, Kind: string(tx.Kind), Currency: tx.Currency.Code,
		Amount: tx.Currency.Format(tx.Amount), Commission: tx.Currency.Format(l.Commission), BPS: l.BPS,
		RecordedAt: tx.RecordedAt.UTC().Format(time.RFC3339Nano), PartitionKey: tx.PK, SortKey: tx.SK, Object: l.Key,
	}
}

func printLineTable(w io.Writer, rows []lookups.Line) {
	if len(rows) == 0 {
		return
	}
	t := table{cols: []column{
		{head: "PERIOD"}, {head: "REV", right: true}, {head: "RECORDED_AT"}, {head: "TRANSACTION", max: 24},
		{head: "KIND"}, {head: "CUR"}, {head: "AMOUNT", right: true}, {head: "COMMISSION", right: true}, {head: "BPS", right: true},
	}}
	for i := range rows {
		l := &rows[i]
		tx := &l.Tx
		t.add(l.Period.Name(), strconv.Itoa(l.Revision), tx.RecordedAt.UTC().Format("2006-01-02T15:04:05Z"), tx.ID,
			string(tx.Kind), tx.Currency.Code, tx.Currency.Format(tx.Amount), tx.Currency.Format(l.Commission), strconv.Itoa(int(l.BPS)))
	}
	t.print(w)
}

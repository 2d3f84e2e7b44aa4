package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// demoMarker marks a folder the demo made, so that it only ever deletes
// its own output.
const demoMarker = ".reportjob-demo"

func cmdDemo(ctx context.Context, c *cli, args []string) error {
	fset := newFlags(c, "demo")
	dir := fset.String("dir", "", "folder for the demo's job: config, store and reports (recreated on each demo; default $XDG_DATA_HOME/reportjob/demo, ~/.local/share/reportjob/demo)")
	n := fset.Int("transactions", 20000, "transactions to generate over the day")
	agencies := fset.Int("agencies", ingest.DefaultAgencies, "number of agencies")
	seed := fset.Int64("seed", 42, "seed: the same seed gives the same day")
	top := fset.Int("top", 15, "agencies to show in the table")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if *n < 1 {
		return usagef("demo --transactions %d: must be > 0", *n)
	}
	if *dir == "" {
		*dir = defaultDemoDir(c.env)
	}
	if err := resetDemoDir(*dir); err != nil {
		return err
	}

	// The demo runs on the embedded default in its own folder, on
	// yesterday (UTC): a whole day of periods, all due. It runs on the
	// config it writes there (demo_folder.go).
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	written, err := writeDemoConfig(*dir, day, *agencies, c.env)
	if err != nil {
		return err
	}
	cfg := *written
	cfg.Log = c.cfg.Log
	cfg.Store.Backend = "embedded"
	cfg.Store.Embedded.Path = filepath.Join(*dir, "reportjob.db")
	cfg.Sink.Dir = filepath.Join(*dir, "reports")
	cfg.Sink.URL = "file://" + cfg.Sink.Dir
	cfg.Report.MaxPeriodsPerRun = max(cfg.Report.MaxPeriodsPerRun, int(24*time.Hour/cfg.Report.Period))
	dc := *c
	dc.cfg = &cfg
	if cfg.Log.Level != "debug" {
		// The table is the demo's output: keep the per-period log lines out of it.
		cfg.Log.Level = "warn"
		dc.log = newLogger(&cfg, c.logOut, c.bar != nil).With("job", cfg.JobName, "run_id", c.runID)
	}

	started := time.Now()
	st, err := openStore(ctx, &dc)
	if err != nil {
		return err
	}
	defer st.close()
	b, err := openBucket(ctx, &dc)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(c.stderr, "demo: generating %d transactions on %s in %s\n", *n, day.Format(time.DateOnly), absPath(*dir))
	// A signal stops the demo between batches and between periods
	// (interrupt.go): a demo interrupted is started over.
	work, in, release := c.interruptible(ctx, "the demo's batch or period in progress")
	defer release()
	again := "run the demo again to start over (it empties its folder first)"
	stats, err := ingest.Generate(work, st, ingest.GenerateOptions{
		N: *n, Agencies: *agencies, Seed: *seed, From: day, To: day.Add(24 * time.Hour), Shards: cfg.Keys.Shards, Stop: in.stopCh(),
	})
	if in.fired() != nil {
		return in.result(ignoreStopped(err), fmt.Sprintf("%d of %d transactions generated in %s, no report made", stats.Written, *n, absPath(*dir)), again)
	}
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	ingested := time.Since(started)

	var rows []report.SummaryRow
	j := dc.newJob(st, b, func(r report.SummaryRow) { rows = append(rows, r) })
	fmt.Fprintf(c.stderr, "demo: %d written in %s; running the job over the day's periods\n", stats.Written, ingested.Round(time.Millisecond))
	res, err := j.Run(work, job.RunOptions{Now: day.Add(24*time.Hour + cfg.Report.Lateness), Progress: c.demoProgress(), Stop: in.stopCh()})
	c.bar.clear()
	if in.fired() != nil {
		return in.result(err, fmt.Sprintf("%d transactions generated, %d of %d periods reported in %s", stats.Written,
			len(res.Periods), len(res.Periods)+res.PeriodsRemaining, absPath(cfg.Sink.Dir)), again)
	}
	if err != nil {
		return err
	}
	printDemo(&dc, rows, *top, *agencies)
	var files int
	for _, pr := range res.Periods {
		files += len(pr.Manifest.Files) + 1
	}
	abs, _ := filepath.Abs(cfg.Sink.Dir)
	fmt.Fprintf(c.stdout, "\n%d transactions on %s, %d periods of %s, %d files in %s\n",
		stats.Written, day.Format(time.DateOnly), len(res.Periods), report.FormatDuration(cfg.Report.Period), files, abs)
	if len(res.Periods) > 0 {
		fmt.Fprintf(c.stdout, "first manifest: %s\n", b.path(report.ManifestKey(res.Periods[0].Period)))
	}
	for _, mr := range res.Statements.Months {
		where, err := demoStatement(ctx, j, b, mr.Month)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "statements of %s (%s, revision %d): %d agencies; %s\n", mr.Month, mr.Status, mr.Revision, mr.Agencies, where)
	}
	c.printDemoExplore(*dir)
	fmt.Fprintf(c.stdout, "query it: scripts/query.sh \"SELECT currency, sum(commission_amount) FROM read_parquet('%s/summary/*/*.parquet') GROUP BY 1 ORDER BY 1\"\n", abs)
	c.printJSON(map[string]any{
		"command": "demo", "status": "ok", "dir": *dir, "day": day.Format(time.DateOnly),
		"transactions": stats.Written, "periods": len(res.Periods), "files": files,
		"ingest_ms": ingested.Milliseconds(), "duration_ms": time.Since(started).Milliseconds(),
	})
	return nil
}

// demoStatement says where one agency's statement of month m is: the
// first PDF the month manifest lists of an agency whose id needs no
// escaping (a CSV when PDFs are off).
func demoStatement(ctx context.Context, j *job.Job, b *bucket, m string) (string, error) {
	dir, err := os.MkdirTemp("", "reportjob-demo-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	st, err := j.Reader(dir).Read(ctx, m)
	if err != nil {
		return "", err
	}
	var csv string
	for _, f := range st.Manifest.Files {
		switch {
		case !strings.HasPrefix(f.Key, report.DirAgencies+"/") || strings.Contains(f.Key, "%"):
		case strings.HasSuffix(f.Key, ".pdf"):
			return "one agency's PDF: " + b.path(f.Key), nil
		case strings.HasSuffix(f.Key, ".csv") && csv == "":
			csv = f.Key
		}
	}
	if csv != "" {
		return "one agency's statement: " + b.path(csv), nil
	}
	return "manifest: " + b.path(report.MonthManifestKey(m)), nil
}

// resetDemoDir empties dir if the demo made it, and refuses any other
// non-empty folder.
func resetDemoDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("demo folder: %w", err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
			return usagef("demo --dir %s: folder exists and was not made by the demo; pick another --dir", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo folder: %w", err)
		}
	}
	// The modes of the sink's and the store's own folders (0750, 0640):
	// the demo folder holds both.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("demo folder: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, demoMarker), []byte("made by reportjob demo; deleted by the next demo\n"), 0o640)
}

// printDemo prints the day per agency and currency, busiest agencies
// first, then the totals per currency.
func printDemo(c *cli, rows []report.SummaryRow, top, generated int) {
	type key struct{ agency, cur string }
	per := map[key]*report.SummaryRow{}
	curs := map[string]*report.SummaryRow{}
	volume := map[string]int64{}
	for _, r := range rows {
		for _, acc := range []*report.SummaryRow{
			lookup(per, key{r.AgencyID, r.Currency.Code}, r), lookup(curs, r.Currency.Code, r),
		} {
			acc.PurchaseCount += r.PurchaseCount
			acc.RefundCount += r.RefundCount
			// A demo day is far from 128 bits.
			acc.Gross, _ = acc.Gross.Add(r.Gross)
			acc.Refunds, _ = acc.Refunds.Add(r.Refunds)
			acc.Net, _ = acc.Net.Add(r.Net)
			acc.Commission, _ = acc.Commission.Add(r.Commission)
		}
		volume[r.AgencyID] += r.PurchaseCount + r.RefundCount
	}
	agencies := make([]string, 0, len(volume))
	for a := range volume {
		agencies = append(agencies, a)
	}
	slices.SortFunc(agencies, func(a, b string) int { return cmp.Or(cmp.Compare(volume[b], volume[a]), cmp.Compare(a, b)) })

	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	line := func(name, cur string, r *report.SummaryRow, c money.Currency) {
		fmt.Fprintf(w, "%s\t%s\t%9d\t%7d\t%14s\t%14s\t%12s\n", name, cur, r.PurchaseCount, r.RefundCount,
			c.FormatTotal(r.Gross), c.FormatTotal(r.Net), c.FormatTotal(r.Commission))
	}
	fmt.Fprintf(w, "AGENCY\tCURRENCY\t%9s\t%7s\t%14s\t%14s\t%12s\n", "PURCHASES", "REFUNDS", "GROSS", "NET", "COMMISSION")
	for i, a := range agencies {
		if i == top {
			fmt.Fprintf(w, "... %d more agencies\n", len(agencies)-top)
			break
		}
		for _, cur := range sortedCurrencies(curs) {
			if r := per[key{a, cur}]; r != nil {
				line(a, cur, r, r.Currency)
			}
		}
	}
	fmt.Fprintln(w)
	for _, cur := range sortedCurrencies(curs) {
		r := curs[cur]
		line(fmt.Sprintf("ALL %d AGENCIES", len(agencies)), cur, r, r.Currency)
	}
	w.Flush()
	if len(agencies) < generated {
		fmt.Fprintf(c.stdout, "(%d of the %d generated agencies had transactions that day)\n", len(agencies), generated)
	}
}

func lookup[K comparable](m map[K]*report.SummaryRow, k K, r report.SummaryRow) *report.SummaryRow {
	acc := m[k]
	if acc == nil {
		acc = &report.SummaryRow{AgencyID: r.AgencyID, Currency: r.Currency}
		m[k] = acc
	}
	return acc
}

func sortedCurrencies(m map[string]*report.SummaryRow) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/reportjob/reportjob/internal/ingest"
)

// maxLineErrors is how many bad lines ingest prints; the summary counts all.
const maxLineErrors = 100

func cmdIngest(ctx context.Context, c *cli, args []string) (err error) {
	fs := newFlags(c, "ingest")
	file := fs.String("file", "", "JSON Lines file of transactions, - for stdin")
	generate := fs.Int("generate", 0, "write N synthetic transactions instead")
	agencies := fs.Int("agencies", ingest.DefaultAgencies, "with --generate: number of agencies")
	seed := fs.Int64("seed", 1, "with --generate: seed (same seed, same transactions)")
	var from, to, now timeFlag
	fs.Var(&from, "from", "with --generate: first recorded_at (default now - report.lateness)")
	fs.Var(&to, "to", "with --generate: end of recorded_at, exclusive (default now)")
	fs.Var(&now, "now", "fix the clock (tests)")
	allowLate := fs.Bool("allow-late", false, "write records older than report.lateness (they may fall in periods already reported: backfill those)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*file == "") == (*generate == 0) {
		return usagef("ingest needs exactly one of --file or --generate")
	}
	if *generate < 0 {
		return usagef("ingest --generate %d: must be > 0", *generate)
	}
	clock := time.Now
	if !now.t.IsZero() {
		clock = func() time.Time { return now.t }
	}
	// The file is opened first: a missing one creates no store.
	var in io.Reader = os.Stdin
	if *file != "" && *file != "-" {
		f, ferr := os.Open(*file)
		if ferr != nil {
			return usagef("ingest --file: %v", ferr)
		}
		defer f.Close()
		in = f
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.close()

	started := time.Now()
	sum := struct {
		Command    string `json:"command"`
		Job        string `json:"job"`
		RunID      string `json:"run_id"`
		Status     string `json:"status"`
		Read       int    `json:"read"`
		Written    int    `json:"written"`
		Invalid    int    `json:"invalid"`
		Duplicates int    `json:"duplicates"`
		DurationMS int64  `json:"duration_ms"`
		Error      string `json:"error,omitempty"`
	}{Command: "ingest", Job: c.cfg.JobName, RunID: c.runID, Status: "ok"}
	defer func() {
		sum.DurationMS = time.Since(started).Milliseconds()
		if err != nil && sum.Error == "" {
			sum.Status, sum.Error = failureStatus(err), err.Error()
		}
		c.printJSON(sum)
	}()

	var stats ingest.Stats
	if *generate > 0 {
		g := ingest.GenerateOptions{N: *generate, Agencies: *agencies, Seed: *seed, From: from.t, To: to.t, Shards: c.cfg.Keys.Shards}
		now := clock()
		if g.To.IsZero() {
			g.To = now
		}
		if g.From.IsZero() {
			g.From = g.To.Add(-c.cfg.Report.Lateness)
		}
		if !*allowLate && g.From.Before(now.Add(-c.cfg.Report.Lateness)) {
			err = usagef("ingest --generate: --from %s is older than report.lateness (%s): such records may land in periods already reported; add --allow-late and backfill those periods",
				g.From.Format(time.RFC3339), c.cfg.Report.Lateness)
		} else {
			work, in, release := c.interruptible(ctx, "the batch being written")
			g.Stop = in.stopCh()
			stats, err = ingest.Generate(work, st, g)
			release()
			if stopped := errors.Is(err, ingest.ErrStopped); stopped || err != nil {
				if stopped {
					err = nil
				}
				err = in.result(err, fmt.Sprintf("%d of %d transactions written", stats.Written, g.N),
					fmt.Sprintf("to write them all, run %s ingest --generate %d --agencies %d --seed %d --from %s --to %s --allow-late "+
						"(the same transactions, with the same keys: those already written are written again unchanged)",
						c.invocation(), g.N, g.Agencies, g.Seed, g.From.UTC().Format(time.RFC3339Nano), g.To.UTC().Format(time.RFC3339Nano)))
			}
		}
	} else {
		var bad []ingest.LineError
		work, stopped, release := c.interruptible(ctx, "the batch being written")
		stats, bad, err = ingest.ReadJSONL(work, in, st, ingest.Options{
			Shards: c.cfg.Keys.Shards, Lateness: c.cfg.Report.Lateness, AllowLate: *allowLate, Now: clock, Logger: c.log,
			Stop: stopped.stopCh(),
		})
		release()
		if errors.Is(err, ingest.ErrStopped) || stopped.fired() != nil {
			err = stopped.result(ignoreStopped(err), ingestDone(stats, len(bad)), ingestRest(c.invocation(), *file, stats.Lines, stopped.abandoned.Load()))
		}
		for i, le := range bad {
			if i == maxLineErrors {
				fmt.Fprintf(c.stderr, "... and %d more bad lines\n", len(bad)-maxLineErrors)
				break
			}
			fmt.Fprintf(c.stderr, "%s: %v\n", *file, &le)
		}
		if err == nil && len(bad) > 0 {
			late := 0
			for _, le := range bad {
				if errors.Is(le.Err, ingest.ErrLate) {
					late++
				}
			}
			hint := "fix them and ingest them again"
			if late > 0 {
				hint = fmt.Sprintf("%d are older than report.lateness (%s): if they must be billed, ingest them with --allow-late and backfill their periods", late, c.cfg.Report.Lateness)
			}
			written := "nothing was written"
			switch stats.Written {
			case 0:
			case 1:
				written = "not written; the other one was written"
			default:
				written = fmt.Sprintf("not written; the other %d were written", stats.Written)
			}
			err = fmt.Errorf("%d of %d records refused (%s): %s", len(bad), stats.Read, written, hint)
		}
	}
	sum.Read, sum.Written, sum.Invalid, sum.Duplicates = stats.Read, stats.Written, stats.Invalid, stats.Duplicates
	if err != nil {
		sum.Status, sum.Error = failureStatus(err), err.Error()
	}
	return err
}

// ignoreStopped is err, nil when it only says the work stopped where it
// was told to.
func ignoreStopped(err error) error {
	if errors.Is(err, ingest.ErrStopped) {
		return nil
	}
	return err
}

// ingestDone says what an interrupted ingest --file did.
func ingestDone(s ingest.Stats, bad int) string {
	done := fmt.Sprintf("input lines 1 to %d read, %d records written", s.Lines, s.Written)
	if bad > 0 {
		done += fmt.Sprintf(", %d refused (listed above)", bad)
	}
	return done
}

// ingestRest says how to ingest the rest of the input after an interrupt.
// After a second signal the batch in flight may be lost: only running
// the whole input again is sure to write it.
func ingestRest(prog, file string, lines int, abandoned bool) string {
	again := "a record with a recorded_at is written again unchanged, with the same keys; one without would be written again under new keys"
	if abandoned {
		return "to ingest the rest, run the same command again (the batch in flight may not be written; " + again + ")"
	}
	if file == "-" {
		return fmt.Sprintf("to ingest the rest, give ingest --file - the input from line %d", lines+1)
	}
	return fmt.Sprintf("to ingest the rest, from line %d: tail -n +%d %s | %s ingest --file - and the other flags as before "+
		"(or run the same command again: %s)", lines+1, lines+1, quoteArg(file), prog, again)
}

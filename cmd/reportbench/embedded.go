package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// The period every embedded scenario fills: one hour, reported at 01:05.
var (
	benchPeriod = report.Period{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
	benchNow    = benchPeriod.End.Add(5 * time.Minute)
)

const benchAgencies = 500

// runRow is one `run` of the binary over one period of Size transactions.
type runRow struct {
	Size      int     `json:"size"`
	LineItems bool    `json:"line_items"`
	Tx        int64   `json:"transactions"`
	Objects   int64   `json:"objects_written"`
	TxPerSec  float64 `json:"tx_per_s"`
	// NoWindow: report.dedupe_window 0 (no dedupe-window index), to show
	// what the index costs; the other rows use the default 35d.
	NoWindow bool `json:"no_dedupe_window,omitempty"`
	// NoStatementFiles: statements.agency_files [] (the month's statements
	// dataset file only, no per-agency PDF and CSV), to show what the
	// statement files cost; the other rows use the default [pdf, csv].
	NoStatementFiles bool `json:"no_statement_files,omitempty"`
	// RawReadPerSec is the raw read of the same items (Query + decode, one
	// goroutine); Ratio = TxPerSec / RawReadPerSec.
	RawReadPerSec float64    `json:"raw_read_items_per_s"`
	Ratio         float64    `json:"ratio_to_raw_read"`
	Proc          procResult `json:"proc"`
	// With -repeat N the job runs N times (the variants in turn, so that
	// each samples the machine at other moments): Proc and Ratio are the
	// fastest run's, as the raw read is its best pass; MedianRatio and
	// FirstRatio are the median run's and the first run's, WallsMS every
	// run's wall time in order, and PeakAnonMaxKB the highest RssAnon of
	// them all.
	Repeats       int       `json:"repeats,omitempty"`
	WallsMS       []float64 `json:"walls_ms,omitempty"`
	MedianRatio   float64   `json:"median_ratio_to_raw_read,omitempty"`
	FirstRatio    float64   `json:"first_ratio_to_raw_read,omitempty"`
	PeakAnonMaxKB int64     `json:"peak_rss_anon_max_kb,omitempty"`
	// PairedRawPerSec is, for each run in order, a raw read pass made just
	// before it; PairedRatios each run's ratio to its own pass, and
	// PairedMedianRatio their median. This machine's speed drifts by a
	// quarter over minutes (other guests on the host), for the job and
	// the raw read alike: a ratio of two measures taken at the same moment
	// is steadier than the fastest run over the best pass.
	PairedRawPerSec   []float64 `json:"paired_raw_read_items_per_s,omitempty"`
	PairedRatios      []float64 `json:"paired_ratios,omitempty"`
	PairedMedianRatio float64   `json:"paired_median_ratio,omitempty"`
}

// setRatios sets the row's ratios to the raw read of rawPerSec.
func (row *runRow) setRatios(rawPerSec float64) {
	row.RawReadPerSec = rawPerSec
	txPerSec := func(wallMS float64) float64 { return float64(row.Tx) / (wallMS / 1000) }
	ratio := func(wallMS float64) float64 { return txPerSec(wallMS) / rawPerSec }
	row.Ratio = ratio(row.Proc.WallMS)
	if len(row.WallsMS) > 1 {
		med := median(row.WallsMS)
		row.MedianRatio, row.FirstRatio = ratio(med), ratio(row.WallsMS[0])
	}
	if len(row.PairedRawPerSec) == len(row.WallsMS) && len(row.WallsMS) > 0 {
		row.PairedRatios = make([]float64, len(row.WallsMS))
		for i, ms := range row.WallsMS {
			row.PairedRatios[i] = txPerSec(ms) / row.PairedRawPerSec[i]
		}
		row.PairedMedianRatio = median(row.PairedRatios)
	}
}

// median is the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	w := slices.Clone(xs)
	slices.Sort(w)
	if len(w)%2 == 0 {
		return (w[len(w)/2-1] + w[len(w)/2]) / 2
	}
	return w[len(w)/2]
}

// rawRow is the raw read of one store.
type rawRow struct {
	Size int `json:"size"`
	// ReadPerSec: Query + decode; ParsePerSec: the same plus item.Parse.
	ReadPerSec  float64 `json:"read_items_per_s"`
	ParsePerSec float64 `json:"read_parse_items_per_s"`
	// ReadPasses is every Query + decode pass, in order: those before
	// the runs, then those after.
	ReadPasses []float64 `json:"read_passes_items_per_s"`
}

// ingestRow is one `ingest` of the binary.
type ingestRow struct {
	Backend   string     `json:"backend"`
	Source    string     `json:"source"` // "jsonl" or "generate"
	Size      int        `json:"size"`
	PerSec    float64    `json:"records_per_s"`
	FileBytes int64      `json:"file_bytes,omitempty"`
	Proc      procResult `json:"proc"`
}

// embeddedConfig writes a config for job on the store at storePath and
// returns its path.
func embeddedConfig(dir, job, storePath string, lineItems, noWindow, noStatementFiles bool) (string, error) {
	window := "35d"
	if noWindow {
		window = "0"
	}
	statementFiles := "[pdf, csv]"
	if noStatementFiles {
		statementFiles = "[]"
	}
	cfg := filepath.Join(dir, job+".yaml")
	body := fmt.Sprintf(`job_name: %s
store: {backend: embedded, embedded: {path: %q}}
sink: {url: %q}
report:
  period: 1h
  lateness: 2m
  start: %q
  line_items: %t
  agency_files: [csv]
  max_periods_per_run: 1
  recheck_after: []
  dedupe_window: %s
statements: {agency_files: %s}
commission: {default_bps: 1000}
log: {level: warn}
`, job, storePath, "file://"+filepath.Join(dir, "reports-"+job), benchPeriod.Start.Format(time.RFC3339), lineItems, window, statementFiles)
	return cfg, os.WriteFile(cfg, []byte(body), 0o644)
}

// runEmbedded measures `run` at each size: a store of n generated
// transactions in one period, delivered with line items and summary only,
// each with and without the per-agency statement files, and summary only
// without the dedupe-window index (five jobs on the same store, each a
// first delivery, so each renders every agency's statement), and the raw
// read of the same items. With -repeat N each job runs N times, the five
// in turn, and its row is its fastest run (the raw read is the best of its
// passes too) with the median and the first beside it.
func (b *bench) runEmbedded(ctx context.Context, sizes []int) error {
	for _, n := range sizes {
		dir, err := b.workdir(fmt.Sprintf("run-%d", n))
		if err != nil {
			return err
		}
		store := filepath.Join(dir, "store.db")
		cfg, err := embeddedConfig(dir, "gen", store, true, false, false)
		if err != nil {
			return err
		}
		b.logf("run %d: generating the store", n)
		gen, err := runProc(ctx, b.bin, nil, "--config", cfg, "ingest", "--generate", strconv.Itoa(n),
			"--agencies", strconv.Itoa(benchAgencies), "--from", benchPeriod.Start.Format(time.RFC3339),
			"--to", benchPeriod.End.Format(time.RFC3339), "--allow-late", "--now", benchNow.Format(time.RFC3339))
		if err != nil {
			return err
		}
		b.res.Ingest = append(b.res.Ingest, ingestRow{Backend: "embedded", Source: "generate", Size: n,
			PerSec: float64(n) / (gen.WallMS / 1000), Proc: gen})
		raw, err := rawRead(ctx, store, n)
		if err != nil {
			return err
		}
		b.res.RawRead = append(b.res.RawRead, raw)
		b.logf("run %d: raw read %.0f items/s (passes %.0f)", n, raw.ReadPerSec, raw.ReadPasses)
		variants := []struct {
			job                         string
			lines, noWindow, noStmtFile bool
		}{
			{"lines", true, false, false}, {"lines-nostatementfiles", true, false, true},
			{"summary", false, false, false}, {"summary-nostatementfiles", false, false, true},
			{"summary-nowindow", false, true, true},
		}
		rows := make([]runRow, len(variants))
		for rep := range b.repeat {
			for i, v := range variants {
				// Each run is a job of its own (its own index entries,
				// checkpoint and reports): each is a first delivery.
				job, lines := v.job, v.lines
				if rep > 0 {
					job = fmt.Sprintf("%s-%d", v.job, rep+1)
				}
				cfg, err := embeddedConfig(dir, job, store, lines, v.noWindow, v.noStmtFile)
				if err != nil {
					return err
				}
				// With repeats, a raw read pass just before the run: the
				// run's paired ratio is to the machine of that moment.
				var paired float64
				if b.repeat > 1 {
					if paired, err = rawReadPass(ctx, store, n); err != nil {
						return err
					}
				}
				b.logf("run %d: %s", n, job)
				p, err := runProc(ctx, b.bin, nil, "--config", cfg, "run", "--now", benchNow.Format(time.RFC3339))
				if err != nil {
					return err
				}
				if tx := int64(p.num("transactions")); tx != int64(n) {
					return fmt.Errorf("run %d %s billed %d transactions, want %d", n, job, tx, n)
				}
				row := &rows[i]
				if rep == 0 || p.WallMS < row.Proc.WallMS {
					*row = runRow{Size: n, LineItems: lines, NoWindow: v.noWindow, NoStatementFiles: v.noStmtFile,
						Tx: int64(p.num("transactions")), Objects: int64(p.num("objects_written")), Proc: p,
						WallsMS: row.WallsMS, PairedRawPerSec: row.PairedRawPerSec, PeakAnonMaxKB: row.PeakAnonMaxKB}
					row.TxPerSec = float64(row.Tx) / (p.WallMS / 1000)
				}
				row.WallsMS = append(row.WallsMS, p.WallMS)
				if paired > 0 {
					row.PairedRawPerSec = append(row.PairedRawPerSec, paired)
				}
				row.PeakAnonMaxKB = max(row.PeakAnonMaxKB, p.PeakAnonKB)
			}
		}
		for i := range rows {
			if b.repeat > 1 {
				rows[i].Repeats = b.repeat
			} else {
				rows[i].WallsMS, rows[i].PeakAnonMaxKB = nil, 0
			}
			rows[i].setRatios(raw.ReadPerSec)
			b.res.Run = append(b.res.Run, rows[i])
		}
		// A second raw read, now that the runs have been through the file:
		// the better of the two stands.
		raw2, err := rawRead(ctx, store, n)
		if err != nil {
			return err
		}
		b.logf("run %d: raw read after the runs %.0f items/s (passes %.0f)", n, raw2.ReadPerSec, raw2.ReadPasses)
		r := &b.res.RawRead[len(b.res.RawRead)-1]
		r.ReadPasses = append(r.ReadPasses, raw2.ReadPasses...)
		r.ReadPerSec, r.ParsePerSec = max(r.ReadPerSec, raw2.ReadPerSec), max(r.ParsePerSec, raw2.ParsePerSec)
		for i := range b.res.Run {
			if row := &b.res.Run[i]; row.Size == n {
				row.setRatios(r.ReadPerSec)
			}
		}
		b.remove(dir)
	}
	return nil
}

// rawRead reads the benchmark period of the store at path the way issue
// 10 measured it: every partition Queried in turn by one goroutine, items
// decoded (the Source's own work), nothing else; then again with
// item.Parse. The best of three passes (two above 1M items) stands for
// each.
func rawRead(ctx context.Context, path string, want int) (rawRow, error) {
	s, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		return rawRow{}, err
	}
	defer s.Close()
	row := rawRow{Size: want}
	passes := 3
	if want > 1_000_000 {
		passes = 2
	}
	for _, parse := range []bool{false, true} {
		best := 0.0
		for range passes {
			rate, err := rawPass(ctx, s, want, parse)
			if err != nil {
				return row, fmt.Errorf("raw read of %s: %w", path, err)
			}
			best = max(best, rate)
			if !parse {
				row.ReadPasses = append(row.ReadPasses, rate)
			}
		}
		if parse {
			row.ParsePerSec = best
		} else {
			row.ReadPerSec = best
		}
	}
	return row, nil
}

// rawReadPass is one raw read pass (Query + decode) of the store at path:
// its items per second.
func rawReadPass(ctx context.Context, path string, want int) (float64, error) {
	s, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	rate, err := rawPass(ctx, s, want, false)
	if err != nil {
		return 0, fmt.Errorf("raw read of %s: %w", path, err)
	}
	return rate, nil
}

// rawPass reads every partition of the benchmark period in turn, items
// decoded (and parsed with parse), and returns the items per second.
func rawPass(ctx context.Context, s *embedded.Store, want int, parse bool) (float64, error) {
	n := 0
	start := time.Now()
	for _, pk := range report.Partitions(benchPeriod, 1) {
		err := s.Query(ctx, pk, "", func(page []item.Item) error {
			n += len(page)
			if parse {
				for _, it := range page {
					if _, err := item.Parse(it); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if n != want {
		return 0, fmt.Errorf("%d items, want %d", n, want)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// ingestJSONL measures `ingest --file` into a fresh embedded store at each
// size: records per second and peak memory.
func (b *bench) ingestJSONL(ctx context.Context, sizes []int) error {
	for _, n := range sizes {
		dir, err := b.workdir(fmt.Sprintf("ingest-%d", n))
		if err != nil {
			return err
		}
		file := filepath.Join(dir, "tx.jsonl")
		size, err := writeJSONL(file, n, 7)
		if err != nil {
			return err
		}
		cfg, err := embeddedConfig(dir, "ingest", filepath.Join(dir, "store.db"), true, false, false)
		if err != nil {
			return err
		}
		b.logf("ingest %d records from JSON Lines (%d MB)", n, size>>20)
		p, err := runProc(ctx, b.bin, nil, "--config", cfg, "ingest", "--file", file, "--allow-late",
			"--now", benchNow.Format(time.RFC3339))
		if err != nil {
			return err
		}
		if w := int(p.num("written")); w != n {
			return fmt.Errorf("ingest of %d records wrote %d", n, w)
		}
		b.res.Ingest = append(b.res.Ingest, ingestRow{Backend: "embedded", Source: "jsonl", Size: n,
			PerSec: float64(n) / (p.WallMS / 1000), FileBytes: size, Proc: p})
		b.remove(dir)
	}
	return nil
}

// writeJSONL writes n generated transactions of the benchmark period as
// JSON Lines and returns the file's size.
func writeJSONL(path string, n int, seed int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	err = ingest.GenerateRecords(ingest.GenerateOptions{N: n, Agencies: benchAgencies, Seed: seed,
		From: benchPeriod.Start, To: benchPeriod.End}, func(r ingest.Record) error {
		line, err := r.MarshalJSON()
		if err != nil {
			return err
		}
		w.Write(line)
		return w.WriteByte('\n')
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), f.Close()
}

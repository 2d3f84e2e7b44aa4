package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// bigPeriodRow is one `run` of the binary over a period of many agencies
// (issue 15 point 8): the manifest must stay small and quick to read.
type bigPeriodRow struct {
	Agencies int   `json:"agencies"`
	Tx       int64 `json:"transactions"`
	Objects  int64 `json:"objects_written"`
	// ManifestBytes is manifest.json; Parts and PartBytes the part objects
	// it names.
	ManifestBytes int64 `json:"manifest_bytes"`
	Parts         int   `json:"manifest_parts"`
	PartBytes     int64 `json:"manifest_part_bytes"`
	// ReadManifestMS is reading manifest.json alone; ReadWholeMS with its
	// parts (report.ReadManifest), as each run, recheck and verify does.
	ReadManifestMS float64 `json:"read_manifest_ms"`
	ReadWholeMS    float64 `json:"read_manifest_whole_ms"`
	// Unchanged is a backfill of the same period: it reads the manifest
	// whole, rebuilds and finds every object in place.
	Unchanged procResult `json:"unchanged_backfill"`
	Proc      procResult `json:"proc"`
	// Bare is the same files written by a bare loop (bareloop.go).
	Bare bareLoop `json:"bare_loop"`
	// Compare is the same run timed for -before and -bin in turns
	// (compare.go), when -before is given.
	Compare *compareResult `json:"compare,omitempty"`
}

// bigPeriod measures `run` over one hourly period of `agencies` agencies,
// one purchase each, with line items and agency files [csv, parquet]:
// four objects per agency.
func (b *bench) bigPeriod(ctx context.Context, agencies int) error {
	dir, err := b.workdir(fmt.Sprintf("bigperiod-%d", agencies))
	if err != nil {
		return err
	}
	defer b.remove(dir)
	reports := filepath.Join(dir, "reports")
	cfg, err := writeBigConfig(dir)
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "tx.jsonl")
	if err := writeAgencies(file, agencies); err != nil {
		return err
	}
	b.logf("bigperiod %d agencies: ingest", agencies)
	if _, err := runProc(ctx, b.bin, nil, "--config", cfg, "ingest", "--file", file, "--allow-late",
		"--now", benchNow.Format(time.RFC3339)); err != nil {
		return err
	}
	b.logf("bigperiod %d agencies: run", agencies)
	p, err := runProc(ctx, b.bin, nil, "--config", cfg, "run", "--now", benchNow.Format(time.RFC3339))
	if err != nil {
		return err
	}
	row := bigPeriodRow{Agencies: agencies, Tx: int64(p.num("transactions")), Objects: int64(p.num("objects_written") - p.num("statement_objects_written")), Proc: p}
	if row.Tx != int64(agencies) {
		return fmt.Errorf("bigperiod %d: billed %d transactions, want %d", agencies, row.Tx, agencies)
	}
	if err := readBigManifest(ctx, reports, &row); err != nil {
		return err
	}
	if want := 4*agencies + 2; row.Objects != int64(want) {
		return fmt.Errorf("bigperiod %d: %d objects written, want %d", agencies, row.Objects, want)
	}
	b.logf("bigperiod %d agencies: bare loop", agencies)
	if row.Bare, err = runBareLoop(reports, filepath.Join(dir, "bare")); err != nil {
		return err
	}
	b.logf("bigperiod %d agencies: unchanged backfill", agencies)
	row.Unchanged, err = runProc(ctx, b.bin, nil, "--config", cfg, "run", "--backfill",
		"--from", benchPeriod.Start.Format(time.RFC3339), "--to", benchPeriod.End.Format(time.RFC3339),
		"--now", benchNow.Format(time.RFC3339))
	if err != nil {
		return err
	}
	if n := row.Unchanged.num("objects_written"); n != 0 {
		return fmt.Errorf("bigperiod %d: the unchanged backfill wrote %.0f objects, want 0", agencies, n)
	}
	if b.before != "" {
		// A failed comparison keeps the row and the runs that were made.
		row.Compare, err = b.compareBig(ctx, agencies, file)
	}
	b.res.BigPeriod = append(b.res.BigPeriod, row)
	return err
}

// writeBigConfig writes the bigperiod scenario's config into dir (its
// store and reports there too) and returns its path.
func writeBigConfig(dir string) (string, error) {
	cfg := filepath.Join(dir, "big.yaml")
	body := fmt.Sprintf(`job_name: big
store: {backend: embedded, embedded: {path: %q}}
sink: {url: %q}
report:
  period: 1h
  lateness: 2m
  start: %q
  line_items: true
  agency_files: [csv, parquet]
  max_periods_per_run: 1
  recheck_after: []
commission: {default_bps: 1000}
log: {level: info}
`, filepath.Join(dir, "store.db"), "file://"+filepath.Join(dir, "reports"), benchPeriod.Start.Format(time.RFC3339))
	return cfg, os.WriteFile(cfg, []byte(body), 0o644)
}

// readBigManifest times reading the period's manifest from the folder:
// manifest.json alone, then whole (the better of three each).
func readBigManifest(ctx context.Context, reports string, row *bigPeriodRow) error {
	d, err := filesink.New(reports)
	if err != nil {
		return err
	}
	bucket := sink.New(d)
	key := report.ManifestKey(benchPeriod)
	readPart := func(ctx context.Context, key string) ([]byte, error) {
		b, _, err := bucket.ReadAll(ctx, key, report.MaxPartBytes)
		return b, err
	}
	for i := range 3 {
		start := time.Now()
		raw, _, err := bucket.ReadAll(ctx, key, 64<<20)
		if err != nil {
			return err
		}
		m, err := report.ParseManifest(raw)
		if err != nil {
			return err
		}
		one := msSince(start)
		start = time.Now()
		raw, _, err = bucket.ReadAll(ctx, key, 64<<20)
		if err != nil {
			return err
		}
		whole, err := report.ReadManifest(ctx, raw, readPart)
		if err != nil {
			return err
		}
		all := msSince(start)
		if i == 0 || one < row.ReadManifestMS {
			row.ReadManifestMS = one
		}
		if i == 0 || all < row.ReadWholeMS {
			row.ReadWholeMS = all
		}
		row.ManifestBytes, row.Parts, row.PartBytes = int64(len(raw)), len(m.Parts), 0
		for _, part := range m.Parts {
			row.PartBytes += part.Bytes
		}
		if len(whole.Files) != int(row.Objects) {
			return fmt.Errorf("the manifest lists %d objects, the run wrote %d", len(whole.Files), row.Objects)
		}
	}
	return nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// writeAgencies writes one purchase for each of n agencies in the
// benchmark period as JSON Lines.
func writeAgencies(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	step := benchPeriod.End.Sub(benchPeriod.Start) / time.Duration(n)
	for i := range n {
		r := ingest.Record{TransactionID: fmt.Sprintf("big-%07d", i), AgencyID: fmt.Sprintf("agency-%07d", i),
			Amount: fmt.Sprintf("%d.%02d", 10+i%90, i%100), Currency: "USD", RecordedAt: benchPeriod.Start.Add(time.Duration(i) * step)}
		line, err := r.MarshalJSON()
		if err != nil {
			return err
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

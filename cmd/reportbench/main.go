// Command reportbench measures reportjob against the targets of issue 10:
// memory and throughput of `run` on the embedded store (the real binary,
// its anonymous RSS sampled from /proc), the raw read of the same items,
// ingest speed, the cost of the incremental read as the table grows
// compared with a Scan + FilterExpression baseline on DynamoDB Local, and
// the DynamoDB path at report.concurrency 1 and 8, and one period of
// 100,000 agencies (issue 15: its manifest, and the time to read it), and
// the close of a month of 10,000 or 100,000 agencies (issue 35: monthclose).
//
// It prints markdown tables and writes every figure as JSON. Run it with
// scripts/bench.sh, which builds the binary and starts DynamoDB Local:
//
//	scripts/bench.sh            small sizes, a few minutes
//	scripts/bench.sh --full     issue 10's sizes (5M transactions, 1M-item tables)
//
// The DynamoDB scenarios are skipped when RJTEST_DYNAMODB_ENDPOINT is
// unset. Results depend on the machine and its load: the JSON records
// both (PERFORMANCE.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sizes are the scenario sizes of one mode.
type sizes struct {
	Run         []int `json:"run"`
	Ingest      []int `json:"ingest"`
	GrowthOld   []int `json:"growth_old"`
	GrowthNew   int   `json:"growth_new"`
	Concurrency int   `json:"concurrency"`
	DDBIngest   int   `json:"ddb_ingest"`
	// BigPeriod is the agencies of the bigperiod scenario's one period.
	BigPeriod int `json:"big_period_agencies"`
	// MonthClose is the agencies of the monthclose scenario's month.
	MonthClose int `json:"month_close_agencies"`
}

var (
	smallSizes = sizes{Run: []int{100_000, 300_000}, Ingest: []int{100_000, 300_000},
		GrowthOld: []int{10_000, 100_000}, GrowthNew: 10_000, Concurrency: 20_000, DDBIngest: 20_000,
		BigPeriod: 20_000, MonthClose: 10_000}
	fullSizes = sizes{Run: []int{100_000, 1_000_000, 5_000_000}, Ingest: []int{100_000, 1_000_000, 3_000_000},
		GrowthOld: []int{10_000, 100_000, 1_000_000}, GrowthNew: 10_000, Concurrency: 200_000, DDBIngest: 100_000,
		BigPeriod: 100_000, MonthClose: 100_000}
)

var scenarios = []string{"run", "ingest", "ddbingest", "growth", "concurrency", "bigperiod", "ddbsplit", "monthclose", "scaling"}

// results is the JSON document.
type results struct {
	Machine     machine         `json:"machine"`
	Mode        string          `json:"mode"`
	Sizes       sizes           `json:"sizes"`
	Started     time.Time       `json:"started"`
	Sections    []section       `json:"sections"`
	Run         []runRow        `json:"run,omitempty"`
	RawRead     []rawRow        `json:"raw_read,omitempty"`
	Ingest      []ingestRow     `json:"ingest,omitempty"`
	DDBIngest   []ddbIngestRow  `json:"dynamodb_ingest,omitempty"`
	Growth      []growthRow     `json:"growth,omitempty"`
	Concurrency []concRow       `json:"concurrency,omitempty"`
	BigPeriod   []bigPeriodRow  `json:"big_period,omitempty"`
	Split       []splitRow      `json:"dynamodb_split,omitempty"`
	MonthClose  []monthCloseRow `json:"month_close,omitempty"`
	Scaling     []scaleRow      `json:"scaling,omitempty"`
	Skipped     []string        `json:"skipped,omitempty"`
	// Failed is the scenario that stopped the bench, with its error: the
	// results are those of the scenarios before it (and its rows so far).
	Failed string `json:"failed,omitempty"`
}

// section is one scenario's wall time and the machine's load around it.
type section struct {
	Name      string  `json:"name"`
	Seconds   float64 `json:"seconds"`
	LoadStart string  `json:"loadavg_start"`
	LoadEnd   string  `json:"loadavg_end"`
}

type bench struct {
	bin  string
	ddb  string
	work string
	keep bool
	// noJournal is the device of the scratch folder when it is ext4
	// without a journal: finished folders are then deleted at the end
	// (disk.go).
	noJournal string
	// repeat is how many times the run scenario runs each job.
	repeat int
	// before is a reportjob binary timed against bin in the bigperiod
	// scenario, pairs runs each (compare.go); "" for none.
	before string
	pairs  int
	log    io.Writer
	res    results
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "reportbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reportbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "", "the reportjob binary to measure (required)")
	full := fs.Bool("full", false, "issue 10's sizes: 5M transactions, 1M-item tables (about an hour)")
	only := fs.String("only", strings.Join(scenarios, ","), "scenarios to run: "+strings.Join(scenarios, ","))
	out := fs.String("json", "bench-results.json", "write the results here")
	work := fs.String("work", "", "scratch folder (default: a new temp folder, removed at the end)")
	keep := fs.Bool("keep", false, "keep the stores and reports")
	ddb := fs.String("dynamodb", os.Getenv(ddbEnv), "DynamoDB Local endpoint (default $"+ddbEnv+")")
	splitRuns := fs.Int("split-runs", 1, "ddbsplit: runs (each with a fresh state table)")
	splitTable := fs.String("split-table", "", "ddbsplit: data table to use, filled only when created (keep it across invocations)")
	repeat := fs.Int("repeat", 0, "run: how many times to run each job, the fastest counted (default 3 with -full, else 1)")
	scaleOnly := fs.String("scaling-parts", "", "scaling: the parts to run, of read,claims,put (default all)")
	runSizes := fs.String("sizes", "", "override the sizes of every scenario with a comma-separated list (smoke runs)")
	before := fs.String("before", "", "bigperiod: a reportjob binary built before a change, timed against -bin in turns")
	pairs := fs.Int("pairs", 2, "bigperiod with -before: runs of each binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" {
		return fmt.Errorf("-bin is required")
	}
	b := &bench{bin: *bin, ddb: *ddb, keep: *keep, log: stderr, repeat: *repeat, pairs: *pairs}
	if *before != "" {
		abs, err := filepath.Abs(*before)
		if err != nil {
			return fmt.Errorf("-before: %w", err)
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
			return fmt.Errorf("-before %q: want a reportjob binary", *before)
		}
		b.before = abs
	}
	if *pairs < 1 {
		return fmt.Errorf("-pairs %d: want 1 or more", *pairs)
	}
	sz, mode := smallSizes, "small"
	if *full {
		sz, mode = fullSizes, "full"
	}
	switch {
	case *repeat < 0:
		return fmt.Errorf("-repeat %d: want 1 or more", *repeat)
	case *repeat == 0 && *full:
		b.repeat = 3
	case *repeat == 0:
		b.repeat = 1
	}
	if *runSizes != "" {
		var list []int
		for f := range strings.SplitSeq(*runSizes, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v <= 0 {
				return fmt.Errorf("-sizes %q: want positive integers", *runSizes)
			}
			list = append(list, v)
		}
		sz = sizes{Run: list, Ingest: list, GrowthOld: list, GrowthNew: list[0], Concurrency: list[0], DDBIngest: list[0], BigPeriod: list[0], MonthClose: list[0]}
		mode = "custom"
	}
	b.work = *work
	if b.work != "" {
		if err := os.MkdirAll(b.work, 0o755); err != nil {
			return err
		}
	} else {
		d, err := os.MkdirTemp("", "reportbench-")
		if err != nil {
			return err
		}
		b.work = d
		if !b.keep {
			defer os.RemoveAll(d)
		}
	}
	b.res = results{Machine: describeMachine(), Mode: mode, Sizes: sz, Started: time.Now().UTC()}
	if b.noJournal = ext4NoJournal("/", b.work); b.noJournal != "" {
		b.res.Machine.Disk = "ext4 without a journal (" + b.noJournal + ")"
		if !b.keep {
			b.logf("the scratch folder is on ext4 without a journal (%s): finished folders are deleted at the end, not between measurements (PERFORMANCE.md, \"How to measure\")", b.noJournal)
			defer b.deleteTrash()
		}
	}
	for _, p := range splitList(*scaleOnly) {
		if !slices.Contains(scaleParts, p) {
			return fmt.Errorf("-scaling-parts: unknown part %q (have %s)", p, strings.Join(scaleParts, ","))
		}
	}
	want := strings.Split(*only, ",")
	for _, s := range want {
		if !slices.Contains(scenarios, s) {
			return fmt.Errorf("-only: unknown scenario %q (have %s)", s, strings.Join(scenarios, ","))
		}
	}
	steps := []struct {
		name string
		ddb  bool
		fn   func() error
	}{
		{"run", false, func() error { return b.runEmbedded(ctx, sz.Run) }},
		{"ingest", false, func() error { return b.ingestJSONL(ctx, sz.Ingest) }},
		{"ddbingest", true, func() error { return b.ddbIngest(ctx, sz.DDBIngest, []int{1, 4, 16}) }},
		{"growth", true, func() error { return b.growth(ctx, sz.GrowthOld, sz.GrowthNew) }},
		{"concurrency", true, func() error { return b.concurrency(ctx, sz.Concurrency) }},
		{"bigperiod", false, func() error { return b.bigPeriod(ctx, sz.BigPeriod) }},
		{"ddbsplit", true, func() error { return b.ddbSplit(ctx, sz.Concurrency, *splitRuns, *splitTable) }},
		{"monthclose", false, func() error { return b.monthClose(ctx, sz.MonthClose) }},
		{"scaling", true, func() error { return b.scaling(ctx, sz.Concurrency, splitList(*scaleOnly)) }},
	}
	for _, st := range steps {
		if !slices.Contains(want, st.name) {
			continue
		}
		if st.ddb && b.ddb == "" {
			b.res.Skipped = append(b.res.Skipped, st.name+": no DynamoDB Local ("+ddbEnv+" unset)")
			continue
		}
		sec := section{Name: st.name, LoadStart: loadavg()}
		start := time.Now()
		err := st.fn()
		sec.Seconds, sec.LoadEnd = time.Since(start).Seconds(), loadavg()
		b.res.Sections = append(b.res.Sections, sec)
		if err != nil {
			// What ran is kept: a full bench takes an hour, and its
			// last scenarios are the ones most likely to fail.
			b.res.Failed = st.name + ": " + err.Error()
			writeMarkdown(stdout, &b.res)
			if werr := saveResults(*out, &b.res); werr != nil {
				return errors.Join(fmt.Errorf("%s: %w", st.name, err), werr)
			}
			return fmt.Errorf("%s: %w", st.name, err)
		}
		// After each scenario, so that a bench killed later keeps it.
		if err := saveResults(*out, &b.res); err != nil {
			return err
		}
	}
	writeMarkdown(stdout, &b.res)
	return saveResults(*out, &b.res)
}

// splitList splits a comma-separated list; "" is none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// saveResults writes r as JSON to path.
func saveResults(path string, r *results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "%s reportbench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// workdir makes a fresh folder in the scratch folder.
func (b *bench) workdir(name string) (string, error) {
	return os.MkdirTemp(b.work, name+"-")
}

// machine describes where the figures were taken.
type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	MemoryMB int64  `json:"memory_mb"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	Binary   string `json:"binary,omitempty"`
	// Disk says when the scratch folder's file system changes how the
	// bench deletes (disk.go).
	Disk string `json:"disk,omitempty"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				m.MemoryMB = kb(line) >> 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// loadavg returns the 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

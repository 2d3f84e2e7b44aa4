package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// Benchmarks of whole commands, in process, on the embedded store: one
// hourly period of RJBENCH_TX transactions (default 200,000), 500
// agencies. They report tx/s (or records/s) and the peak of the Go heap's
// object bytes, so that benchstat compares commits:
//
//	go test ./cmd/reportjob -run '^$' -bench . -benchmem -count 6 | tee new.txt
//	RJBENCH_TX=1000000 go test ./cmd/reportjob -run '^$' -bench BenchmarkRunSummaryOnly -cpuprofile cpu.out
//
// BenchmarkRawRead is the yardstick of issue 10: the same items Queried
// and decoded by one goroutine; a run's tx/s over its items/s is the
// ratio PERFORMANCE.md reports. The process's anonymous RSS at sizes up
// to 5M is measured on the built binary by scripts/bench.sh.
// RJBENCH_WINDOW=0 sets report.dedupe_window (0: no dedupe index).
// RJBENCH_STATEMENTS=none (or a list such as csv) sets
// statements.agency_files.
// RJBENCH_CPUPROF=FILE profiles the CPU of the runs only (-cpuprofile
// also counts the store's generation).
// RJBENCH_HEAPPROF=FILE writes a heap profile at each new heap peak.

var benchPeriod = report.Period{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}

const benchNow = "2026-01-01T01:05:00Z"

func benchSize(b *testing.B) int {
	b.Helper()
	n := 200_000
	if s := os.Getenv("RJBENCH_TX"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("RJBENCH_TX=%q: want a positive integer", s)
		}
		n = v
	}
	return n
}

// benchConfig writes the config of a store and sink in dir.
func benchConfig(b *testing.B, dir string, lineItems bool) string {
	b.Helper()
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`job_name: bench
store: {backend: embedded, embedded: {path: %q}}
sink: {url: %q}
report: {period: 1h, lateness: 2m, start: "2026-01-01", line_items: %t, agency_files: [csv], max_periods_per_run: 1%s}
log: {level: warn}
%s`, filepath.Join(dir, "store.db"), "file://"+filepath.Join(dir, "reports"), lineItems, benchWindow(), benchStatements())
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	return cfg
}

// benchWindow is the report settings' tail for RJBENCH_WINDOW, a
// report.dedupe_window such as 0 (the index out of the measure); "" when
// unset (the default window).
func benchWindow() string {
	w := os.Getenv("RJBENCH_WINDOW")
	if w == "" {
		return ""
	}
	return ", dedupe_window: " + strconv.Quote(w)
}

// benchStatements is the statements settings for RJBENCH_STATEMENTS, the
// list of statements.agency_files ("none" for none: the monthly draft's
// agency files out of the measure); "" when unset (the default files).
func benchStatements() string {
	f := os.Getenv("RJBENCH_STATEMENTS")
	switch f {
	case "":
		return ""
	case "none":
		f = ""
	}
	return "statements: {agency_files: [" + f + "]}\n"
}

// benchStore makes a store of n generated transactions in the benchmark
// period and returns its path.
// With RJBENCH_STORE=FILE, the store is generated once into FILE and
// reused by later benchmarks of the same size (FILE.n holds n): runs
// compared with benchstat then measure the run alone, also in CPU time.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	cache := os.Getenv("RJBENCH_STORE")
	if cache != "" {
		if got, err := os.ReadFile(cache + ".n"); err == nil && string(got) == strconv.Itoa(n) {
			return cache
		}
	}
	dir := b.TempDir()
	mustRunCLI(b, "--config", benchConfig(b, dir, true), "ingest", "--generate", strconv.Itoa(n), "--agencies", "500",
		"--from", benchPeriod.Start.Format(time.RFC3339), "--to", benchPeriod.End.Format(time.RFC3339),
		"--allow-late", "--now", benchNow)
	path := filepath.Join(dir, "store.db")
	if cache != "" {
		testenv.CopyFile(b, path, cache)
		if err := os.WriteFile(cache+".n", []byte(strconv.Itoa(n)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return path
}

func mustRunCLI(b *testing.B, args ...string) string {
	b.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != 0 {
		b.Fatalf("reportjob %v: exit %d\n%s\n%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

// BenchmarkRunLineItems delivers a period with line items and agency CSVs
// (the default config), from a fresh copy of the store each time.
func BenchmarkRunLineItems(b *testing.B) { benchRun(b, true) }

// BenchmarkRunSummaryOnly delivers a period without line items.
func BenchmarkRunSummaryOnly(b *testing.B) { benchRun(b, false) }

func benchRun(b *testing.B, lineItems bool) {
	n := benchSize(b)
	src := benchStore(b, n)
	var (
		peak uint64
		cpu  time.Duration // the runs' CPU time (user and system), copies of the store left out
	)
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		testenv.CopyFile(b, src, filepath.Join(dir, "store.db"))
		cfg := benchConfig(b, dir, lineItems)
		ph := startHeapPeak()
		stopCPU := startCPUProfile(b)
		b.StartTimer()
		cpu0 := testenv.ProcessCPU()
		out := mustRunCLI(b, "--config", cfg, "run", "--now", benchNow)
		cpu += testenv.ProcessCPU() - cpu0
		b.StopTimer()
		stopCPU()
		peak = max(peak, ph.stop())
		if !bytes.Contains([]byte(out), []byte(`"transactions":`+strconv.Itoa(n)+`,`)) {
			b.Fatalf("run did not bill %d transactions: %s", n, out)
		}
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	// CPU time is steadier than wall time on a shared machine.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// startCPUProfile profiles the CPU to the file RJBENCH_CPUPROF names, if
// set, until the returned function is called: the run alone, without the
// store's generation that -cpuprofile also counts.
func startCPUProfile(b *testing.B) (stop func()) {
	b.Helper()
	path := os.Getenv("RJBENCH_CPUPROF")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawRead Queries and decodes the period's items with one
// goroutine, as issue 10 measured the store's own speed.
func BenchmarkRawRead(b *testing.B) {
	n := benchSize(b)
	s, err := embedded.Open(benchStore(b, n), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	read := 0
	for b.Loop() {
		for _, pk := range report.Partitions(benchPeriod, 1) {
			if err := s.Query(b.Context(), pk, "", func(p []item.Item) error { read += len(p); return nil }); err != nil {
				b.Fatal(err)
			}
		}
	}
	if read != n*b.N {
		b.Fatalf("read %d items, want %d", read, n*b.N)
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkIngestJSONL ingests a JSON Lines file into a fresh store.
func BenchmarkIngestJSONL(b *testing.B) {
	n := benchSize(b)
	src := filepath.Join(b.TempDir(), "tx.jsonl")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	err = ingest.GenerateRecords(ingest.GenerateOptions{N: n, Agencies: 500, Seed: 3, From: benchPeriod.Start, To: benchPeriod.End},
		func(r ingest.Record) error {
			line, err := r.MarshalJSON()
			w.Write(line)
			w.WriteByte('\n')
			return err
		})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		cfg := benchConfig(b, dir, true)
		ph := startHeapPeak()
		b.StartTimer()
		mustRunCLI(b, "--config", cfg, "ingest", "--file", src, "--allow-late", "--now", benchNow)
		b.StopTimer()
		peak = max(peak, ph.stop())
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// heapPeak samples the Go heap's object bytes (live and not yet swept)
// every millisecond.
type heapPeak struct {
	peak atomic.Uint64
	done chan struct{}
	wg   sync.WaitGroup
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	prof := os.Getenv("RJBENCH_HEAPPROF")
	var profiled uint64
	read := func() {
		metrics.Read(s)
		v := s[0].Value.Uint64()
		if v > h.peak.Load() {
			h.peak.Store(v)
		}
		if prof != "" && v > profiled+profiled/10 {
			profiled = v
			if f, err := os.Create(prof); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}
	h.wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
	})
	return h
}

func (h *heapPeak) stop() uint64 {
	close(h.done)
	h.wg.Wait()
	return h.peak.Load()
}

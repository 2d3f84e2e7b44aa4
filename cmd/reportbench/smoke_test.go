package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs every scenario of the harness at a tiny size, so that it
// cannot rot: the binary is built, stores are filled, runs bill every
// transaction, memory is sampled, the tables and the JSON are written. The
// DynamoDB scenarios run when DynamoDB Local is up (scripts/test.sh).
// Timings are not checked: they mean nothing at this size.
func TestSmoke(t *testing.T) {
	dir, bin := buildBinary(t)
	only := "run,ingest,bigperiod"
	if _, err := os.Stat(monthCloseFont); err == nil {
		only += ",monthclose" // scripts/tools.sh installs the font (fonts-ipafont-gothic)
	}
	if os.Getenv(ddbEnv) != "" {
		only += ",ddbingest,growth,concurrency,ddbsplit,scaling"
	}
	res, stdout, err := runBench(t, dir, "-bin", bin, "-sizes", "300", "-only", only)
	if err != nil {
		t.Fatal(err)
	}
	// Runs: with line items and summary only, each with and without the
	// statement files, and summary only without the dedupe-window index.
	if len(res.Run) != 5 || len(res.RawRead) != 1 || len(res.Ingest) != 2 {
		t.Fatalf("results: %d runs, %d raw reads, %d ingests; want 5, 1, 2", len(res.Run), len(res.RawRead), len(res.Ingest))
	}
	if len(res.BigPeriod) != 1 || res.BigPeriod[0].Tx != 300 || res.BigPeriod[0].Objects != 4*300+2 || res.BigPeriod[0].ManifestBytes == 0 {
		t.Errorf("big period rows %+v: want one of 300 agencies", res.BigPeriod)
	}
	if strings.Contains(only, "monthclose") {
		_, noPdftotext := exec.LookPath("pdftotext")
		if len(res.MonthClose) != 1 || res.MonthClose[0].PDFs != 300 || !res.MonthClose[0].JapaneseChecked && noPdftotext == nil ||
			res.MonthClose[0].Close.PeakAnonKB <= 0 || res.MonthClose[0].Draft.PeakAnonKB <= 0 {
			t.Errorf("month close rows %+v: want one of 300 agencies, their final PDFs, a ja PDF read back", res.MonthClose)
		}
	}
	for i, r := range res.Run {
		if want := i == 4; r.NoWindow != want {
			t.Errorf("run row %d: without the dedupe window %v, want %v", i, r.NoWindow, want)
		}
		if want := i == 1 || i == 3 || i == 4; r.NoStatementFiles != want {
			t.Errorf("run row %d: without statement files %v, want %v", i, r.NoStatementFiles, want)
		}
	}
	for _, r := range res.Run {
		if r.Tx != 300 || r.Proc.PeakAnonKB <= 0 || r.Proc.MaxRSSKB <= 0 || r.Ratio <= 0 || r.Proc.Samples == 0 {
			t.Errorf("run row %+v: want 300 transactions and memory samples", r)
		}
	}
	for _, in := range res.Ingest {
		if in.PerSec <= 0 || in.Proc.PeakAnonKB <= 0 {
			t.Errorf("ingest row %+v", in)
		}
	}
	if os.Getenv(ddbEnv) != "" {
		if len(res.Growth) != 1 || res.Growth[0].ItemsRead != 300 || res.Growth[0].ScanScanned != 600 {
			t.Errorf("growth rows %+v: want 300 items read, 600 scanned", res.Growth)
		}
		if len(res.Concurrency) != 2 || len(res.DDBIngest) != 3 {
			t.Errorf("%d concurrency rows, %d DynamoDB ingest rows; want 2 and 3", len(res.Concurrency), len(res.DDBIngest))
		}
		if len(res.Split) != 1 {
			t.Fatalf("%d ddbsplit rows, want 1", len(res.Split))
		}
		sp := res.Split[0]
		// BatchGetItem on the state table: the 300 claims looked up, and the
		// job state's month items of owed rechecks (read the same way).
		if sp.Items != 300 || sp.RunMS <= 0 || sp.ClientCPUMS <= 0 || sp.ReadMS <= 0 || sp.DedupeMS <= 0 ||
			sp.Requests["BatchWriteItem state"].Items != 300 || sp.Requests["BatchGetItem state"].Items < 300 {
			t.Errorf("ddbsplit row %+v: want 300 claims written and looked up, the phases timed", sp)
		}
	}
	if os.Getenv(ddbEnv) != "" {
		checkScaling(t, res.Scaling)
	}
	md := stdout.String()
	for _, want := range []string{"### `run`", "| 300 | yes |", "| 300 | no |", "### `ingest`"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestFailedScenarioKeepsResults: a scenario that fails stops the bench,
// but the tables and the JSON of the scenarios before it are written, with
// the failure named (the last session's full bench lost an hour of figures
// to a failure in its last scenario).
func TestFailedScenarioKeepsResults(t *testing.T) {
	dir, bin := buildBinary(t)
	// A binary that refuses "run": the ingest scenario (ingest only)
	// succeeds, bigperiod (ingest, then run) fails.
	wrapper := filepath.Join(dir, "refuses-run")
	script := "#!/bin/sh\ncase \" $* \" in *\" run \"*) echo refused >&2; exit 3;; esac\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res, stdout, err := runBench(t, dir, "-bin", wrapper, "-sizes", "200", "-only", "ingest,bigperiod")
	if err == nil || !strings.Contains(err.Error(), "bigperiod") {
		t.Fatalf("%v, want bigperiod's failure", err)
	}
	if len(res.Ingest) == 0 || !strings.HasPrefix(res.Failed, "bigperiod: ") {
		t.Errorf("results after a failure: %d ingest rows, failed %q; want the ingest's rows and bigperiod's failure", len(res.Ingest), res.Failed)
	}
	if md := stdout.String(); !strings.Contains(md, "Stopped by a failed scenario") || !strings.Contains(md, "records/s") {
		t.Errorf("tables after a failure:\n%s", md)
	}
}

// TestRunRepeat: with -repeat each job of the run scenario runs that many
// times, each a first delivery of its own job that bills every
// transaction; its row is the fastest run, with every run's wall time,
// the median's and the first's ratios, the highest RssAnon of all, and
// each run's ratio to a raw read pass made just before it.
func TestRunRepeat(t *testing.T) {
	dir, bin := buildBinary(t)
	res, stdout, err := runBench(t, dir, "-bin", bin, "-sizes", "200", "-only", "run", "-repeat", "3", "-keep")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Run) != 5 {
		t.Fatalf("%d run rows, want 5", len(res.Run))
	}
	for _, r := range res.Run {
		if r.Tx != 200 || r.Repeats != 3 || len(r.WallsMS) != 3 || r.Proc.WallMS != slices.Min(r.WallsMS) ||
			r.Ratio < r.MedianRatio || r.MedianRatio <= 0 || r.FirstRatio <= 0 || r.Ratio < r.FirstRatio ||
			r.PeakAnonMaxKB < r.Proc.PeakAnonKB || len(r.PairedRatios) != 3 || len(r.PairedRawPerSec) != 3 ||
			r.PairedMedianRatio != median(r.PairedRatios) || slices.Min(r.PairedRatios) <= 0 {
			t.Errorf("run row %+v: want the fastest of 3 runs, every run's wall time, the median's and the first's ratios", r)
		}
	}
	if md := stdout.String(); !strings.Contains(md, "Each job ran 3 times") || !strings.Contains(md, "paired ratio") {
		t.Errorf("markdown lacks the repeats:\n%s", md)
	}
	// Each run was a job of its own: three reports folders per variant.
	dirs, err := filepath.Glob(filepath.Join(dir, "work", "run-200-*", "reports-summary*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 9 {
		t.Errorf("summary reports folders %v: want 3 runs of 3 summary jobs", dirs)
	}
}

// buildBinary builds reportjob into a new temporary folder and returns
// the folder and the binary's path.
func buildBinary(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "reportjob")
	build := exec.Command("go", "build", "-o", bin, "github.com/reportjob/reportjob/cmd/reportjob")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, bin
}

// runBench runs the harness with args, its JSON and work folder in dir,
// and returns the results it wrote, its stdout (the tables) and its error
// (with its stderr). A harness that wrote no results fails the test.
func runBench(t *testing.T, dir string, args ...string) (results, *bytes.Buffer, error) {
	t.Helper()
	out := filepath.Join(dir, "results.json")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), append(args, "-json", out, "-work", filepath.Join(dir, "work")), &stdout, &stderr)
	if err != nil {
		err = fmt.Errorf("reportbench: %w\nstderr:\n%s", err, stderr.String())
	}
	var res results
	data, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("%v (%v)", rerr, err)
	}
	if jerr := json.Unmarshal(data, &res); jerr != nil {
		t.Fatalf("%v (%v)", jerr, err)
	}
	return res, &stdout, err
}

// checkScaling checks the scaling scenario's rows at -sizes 300: 12 reads
// (3 shard counts x 4 concurrencies) of every item, 4 claim writes, and
// 4 PUT rows when versitygw is up.
func checkScaling(t *testing.T, rows []scaleRow) {
	t.Helper()
	want := map[string]int{"read": 12, "claims": 4}
	if os.Getenv(s3Env) != "" {
		want["put"] = 4
	}
	got := map[string]int{}
	for _, r := range rows {
		got[r.Kind]++
		if r.PerSec <= 0 || r.WallMS <= 0 || r.ClientCPUMS < 0 || r.LoadStart == "" {
			t.Errorf("scaling row %+v: want a rate, times and the load", r)
		}
		switch r.Kind {
		case "read":
			if r.N != 300 || r.Requests == 0 || r.Capacity <= 0 {
				t.Errorf("scaling read row %+v: want 300 items, Queries and RCU", r)
			}
		case "claims":
			// The claims and the list's chunk: 4 batches of 25, and one more.
			if r.N != 100 || r.Capacity < 100 {
				t.Errorf("scaling claims row %+v: want 100 claims written", r)
			}
		case "put":
			if r.N != 100 {
				t.Errorf("scaling put row %+v: want 100 PUTs", r)
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("scaling rows by kind %v, want %v", got, want)
	}
}

// TestCompareBefore: with -before, the bigperiod scenario also times the
// same run for both binaries in turns (B A A B with -pairs 2), each on a
// fresh store that bills every transaction, and prints them in order
// with the ratios of the means. Here both are the same binary; one is
// called through a wrapper so that the runs can be told apart.
func TestCompareBefore(t *testing.T) {
	defer func(d time.Duration) { compareSettle = d }(compareSettle)
	compareSettle = 0
	dir, bin := buildBinary(t)
	before := filepath.Join(dir, "before")
	log := filepath.Join(dir, "before.log")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(before, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res, stdout, err := runBench(t, dir, "-bin", bin, "-before", before, "-sizes", "200", "-only", "bigperiod")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.BigPeriod) != 1 || res.BigPeriod[0].Compare == nil {
		t.Fatalf("big period rows %+v: want one with a comparison", res.BigPeriod)
	}
	c := res.BigPeriod[0].Compare
	var order []string
	for _, r := range c.Runs {
		order = append(order, r.Binary)
		if r.Proc.WallMS <= 0 || r.Proc.PeakAnonKB <= 0 || r.Proc.PeriodMS <= 0 || r.Proc.num("transactions") != 200 {
			t.Errorf("compared run %+v: want 200 transactions billed, timed and sampled", r)
		}
	}
	if want := []string{"before", "after", "after", "before"}; !slices.Equal(order, want) {
		t.Errorf("runs in the order %v, want %v", order, want)
	}
	if c.WallRatio <= 0 || c.CPURatio <= 0 {
		t.Errorf("ratios %v and %v, want both above 0", c.WallRatio, c.CPURatio)
	}
	// The before binary ran an ingest and a run for each of its two runs.
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if runs := strings.Count(string(data), " run --now"); runs != 2 || strings.Count(string(data), " ingest ") != 2 {
		t.Errorf("the before binary was called as:\n%s\nwant 2 ingests and 2 runs", data)
	}
	if md := stdout.String(); !strings.Contains(md, "before (`"+before+"`) and after, in turns") || !strings.Contains(md, "wall ") {
		t.Errorf("markdown lacks the comparison:\n%s", md)
	}

	// A before binary that fails its run stops the bench, and the row
	// made before the comparison is kept.
	refuses := filepath.Join(dir, "refuses-run")
	script = "#!/bin/sh\ncase \" $* \" in *\" run \"*) echo refused >&2; exit 3;; esac\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(refuses, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res, _, err = runBench(t, t.TempDir(), "-bin", bin, "-before", refuses, "-sizes", "200", "-only", "bigperiod", "-pairs", "1")
	if err == nil || !strings.Contains(err.Error(), "before: run") {
		t.Fatalf("%v, want the before binary's failed run", err)
	}
	if len(res.BigPeriod) != 1 || res.BigPeriod[0].Tx != 200 || res.BigPeriod[0].Compare == nil || len(res.BigPeriod[0].Compare.Runs) != 0 {
		t.Errorf("big period rows %+v: want the row, with a comparison of no runs", res.BigPeriod)
	}
}

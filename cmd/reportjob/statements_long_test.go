//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStatementsLongMemory (RJTEST_LONG=1): a month (January in
// Africa/Lagos: 744 hourly periods; the run delivers 745, the last one
// February's first) of 1,000 agencies, one transaction each a day, and one
// agency ("whale") of 100,000 transactions, on the embedded stack through
// the binary; then `statement --close --month 2026-01` rebuilds and
// finalises the month alone. The periods are delivered without line items
// or per-agency period files (report.line_items: false, agency_files: []):
// the close reads neither. The same month with a whale of 1,000
// transactions is the control. The close reads the period summaries, never
// the line items: its peak memory (getrusage maxrss of the process) must
// not grow with the whale's transactions. It prints the times and peaks:
//
//	RJTEST_LONG=1 go test ./cmd/reportjob -run TestStatementsLongMemory -v -timeout 60m
func TestStatementsLongMemory(t *testing.T) {
	if !procLong() {
		t.Skip("long mode only (RJTEST_LONG=1)")
	}
	bin := procBinary(t)
	type result struct {
		whale                  int
		ingest, run, close     time.Duration
		runMaxRSS, closeMaxRSS int64 // KB
		agencies               float64
	}
	var results []result
	for _, whale := range []int{1_000, 100_000} {
		h := newHarness(t, harnessOptions{start: "2025-12-31T23:00:00Z",
			extra: "  recheck_after: [1h]\n  max_periods_per_run: 1000\n  line_items: false\n  agency_files: []",
			top:   e2eCommissionYAML + "\nstatements: {timezone: " + stZone + ", close_after: 3d, agency_files: [csv, parquet]}"})
		r := &stRunner{t: t, h: h, bin: bin}
		r.cli(0, "init")
		file := filepath.Join(h.dir, "month.jsonl")
		stLongFixture(t, file, whale)
		res := result{whale: whale}
		started := time.Now()
		r.cli(0, "ingest", "--file", file, "--now", "2026-02-01T00:05:00Z", "--allow-late")
		res.ingest = time.Since(started)
		sum, took, rss := stTimed(t, bin, h, "run", "--now", "2026-02-01T00:05:00Z")
		if sum["periods_processed"] != float64(745) {
			t.Fatalf("run: %v", sum)
		}
		res.run, res.runMaxRSS = took, rss
		sum, took, rss = stTimed(t, bin, h, "statement", "--close", "--month", "2026-01", "--now", "2026-02-01T00:06:00Z")
		if sum["statement_status"] != "final" || sum["agencies"] != float64(1001) {
			t.Fatalf("statement --close: %v", sum)
		}
		res.close, res.closeMaxRSS, res.agencies = took, rss, sum["agencies"].(float64)
		objs := h.objects()
		mans := stCheckObjects(t, h, objs)
		stCheckTotals(t, h, objs, mans, stZone)
		results = append(results, res)
		line := fmt.Sprintf("statements long: whale %d tx, 1,000 agencies x 31 days, 744 periods: ingest %s; run (delivery + close) %s, maxrss %d MB; "+
			"statement --close (the close alone: 744 summaries, %v agencies) %s, maxrss %d MB",
			whale, res.ingest.Round(time.Millisecond), res.run.Round(time.Millisecond), res.runMaxRSS>>10, res.agencies,
			res.close.Round(time.Millisecond), res.closeMaxRSS>>10)
		t.Log(line)
		fmt.Println(line)
	}
	// Flat: 100 times the whale's transactions, the same close memory
	// (within 25% + 16 MB of noise).
	c, b := results[0].closeMaxRSS, results[1].closeMaxRSS
	if b > c+c/4+16<<10 {
		t.Errorf("the close's peak memory grew with the transactions: %d MB with 1,000, %d MB with 100,000", c>>10, b>>10)
	}
}

// stLongFixture writes the month's transactions as JSON Lines: agency
// a0000..a0999 one a day (USD, EUR, JPY, BHD in turn), and the whale's n
// spread over the month.
func stLongFixture(t *testing.T, name string, whale int) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	monthStart := time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC)
	amounts := map[string]string{"USD": "12.34", "EUR": "9.99", "JPY": "1500", "BHD": "1.005"}
	curs := []string{"USD", "EUR", "JPY", "BHD"}
	for a := 0; a < 1000; a++ {
		for d := 0; d < 31; d++ {
			cur := curs[(a+d)%4]
			at := monthStart.Add(time.Duration(d)*24*time.Hour + time.Duration((a*37+d*11)%(24*60))*time.Minute)
			enc.Encode(map[string]string{"transaction_id": fmt.Sprintf("a%04d-%02d", a, d), "agency_id": fmt.Sprintf("a%04d", a),
				"amount": amounts[cur], "currency": cur, "recorded_at": at.Format(time.RFC3339), "customer_id": "c"})
		}
	}
	step := 744 * time.Hour / time.Duration(whale)
	for i := 0; i < whale; i++ {
		at := monthStart.Add(time.Duration(i) * step).Truncate(time.Second)
		enc.Encode(map[string]string{"transaction_id": fmt.Sprintf("w%06d", i), "agency_id": "whale", "amount": "1.00",
			"currency": "USD", "recorded_at": at.Format(time.RFC3339), "customer_id": "c"})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// stTimed runs the binary to its end and returns its summary line, wall
// time and maxrss (KB).
func stTimed(t *testing.T, bin string, h *harness, args ...string) (map[string]any, time.Duration, int64) {
	t.Helper()
	cmd := procCmd(bin, h, nil, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	started := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("reportjob %v: %v\n%s\n%s", args, err, out.String(), procTail(errb.String(), 20))
	}
	took := time.Since(started)
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return lastJSON(t, out.String()), took, rss
}

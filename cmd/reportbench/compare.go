package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// The before/after comparison of the bigperiod scenario (issue 35 target
// 1): with -before BIN, the same run (the same input, a fresh store and
// folder each time, its own ingest) is timed for BIN and for -bin in
// turns, -pairs times each, in the order B A A B B A ...: drift of the
// machine's speed over minutes (other guests on the host, the disk's
// write-back) then falls on both alike, and neither always runs first.
// Each run starts after a sync(2) and a pause, so that the previous run's
// write-back does not fall on it.

// compareSettle is the pause before each compared run.
var compareSettle = 5 * time.Second

// compareRun is one timed run of one of the two binaries.
type compareRun struct {
	// Binary is "before" (-before) or "after" (-bin).
	Binary  string     `json:"binary"`
	Started time.Time  `json:"started"`
	Load    string     `json:"loadavg_start"`
	Proc    procResult `json:"proc"`
}

// compareResult is the comparison's runs in order, and the ratios of
// the before binary's means to the after binary's.
type compareResult struct {
	Before    string       `json:"before_bin"`
	Runs      []compareRun `json:"runs"`
	WallRatio float64      `json:"wall_ratio"`
	CPURatio  float64      `json:"cpu_ratio"`
}

// compareBig runs the bigperiod run of agencies agencies (input file) for
// b.before and b.bin in turns, b.pairs times each.
func (b *bench) compareBig(ctx context.Context, agencies int, file string) (*compareResult, error) {
	res := &compareResult{Before: b.before}
	var wall, cpu [2]float64
	for i := range 2 * b.pairs {
		which := []int{0, 1, 1, 0}[i%4] // B A A B: each pair changes who goes first
		name, bin := "before", b.before
		if which == 1 {
			name, bin = "after", b.bin
		}
		b.logf("bigperiod %d agencies: compared run %d of %d (%s)", agencies, i+1, 2*b.pairs, name)
		run, err := b.comparedRun(ctx, agencies, file, name, bin, i)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, run)
		wall[which] += run.Proc.WallMS
		cpu[which] += run.Proc.UserMS + run.Proc.SysMS
	}
	if wall[1] > 0 && cpu[1] > 0 {
		res.WallRatio, res.CPURatio = wall[0]/wall[1], cpu[0]/cpu[1]
	}
	return res, nil
}

// comparedRun ingests file into a fresh store with bin and times its run.
func (b *bench) comparedRun(ctx context.Context, agencies int, file, name, bin string, i int) (compareRun, error) {
	dir, err := b.workdir(fmt.Sprintf("bigperiod-%d-%s-%d", agencies, name, i))
	if err != nil {
		return compareRun{}, err
	}
	defer b.remove(dir)
	cfg, err := writeBigConfig(dir)
	if err != nil {
		return compareRun{}, err
	}
	if _, err := runProc(ctx, bin, nil, "--config", cfg, "ingest", "--file", file, "--allow-late",
		"--now", benchNow.Format(time.RFC3339)); err != nil {
		return compareRun{}, fmt.Errorf("%s: ingest: %w", name, err)
	}
	syscall.Sync()
	select {
	case <-ctx.Done():
		return compareRun{}, ctx.Err()
	case <-time.After(compareSettle):
	}
	run := compareRun{Binary: name, Started: time.Now().UTC(), Load: loadavg()}
	if run.Proc, err = runProc(ctx, bin, nil, "--config", cfg, "run", "--now", benchNow.Format(time.RFC3339)); err != nil {
		return run, fmt.Errorf("%s: run: %w", name, err)
	}
	if n := run.Proc.num("transactions"); n != float64(agencies) {
		return run, fmt.Errorf("%s: billed %.0f transactions, want %d", name, n, agencies)
	}
	return run, nil
}

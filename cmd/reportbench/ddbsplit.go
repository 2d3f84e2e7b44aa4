package main

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	rjddb "github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// ddbPIDEnv names DynamoDB Local's process id (scripts/bench.sh sets it
// from scripts/servers.sh's pid file): its CPU time is read from
// /proc/PID/stat before and after each run.
const ddbPIDEnv = "RJBENCH_DYNAMODB_PID"

// splitRow is one run of the DynamoDB path (a first delivery of a period
// of 8 shards x 4 quarters, line items on) with its time split between the
// job and DynamoDB Local.
type splitRow struct {
	Run         int     `json:"run"`
	Items       int     `json:"items"`
	Shards      int     `json:"shards"`
	Concurrency int     `json:"concurrency"`
	RunMS       float64 `json:"run_ms"`
	// ClientCPUMS is the job's CPU (getrusage of this process, which runs
	// the job in-process and nothing else meanwhile); ServerCPUMS is
	// DynamoDB Local's (/proc/PID/stat utime + stime), -1 when unknown.
	ClientCPUMS float64 `json:"client_cpu_ms"`
	ServerCPUMS float64 `json:"server_cpu_ms"`
	// ReadMS: from the run's start to the last Query's return.
	ReadMS float64 `json:"read_ms"`
	// DedupeMS: from NewClaimWriter to the return of Commit (lookups,
	// decisions, the aggregation of each billed transaction, the claims).
	DedupeMS float64 `json:"dedupe_ms"`
	// IndexWaitMS is the time the job spent inside the claim writer's
	// calls (NewClaimWriter, Add, Release, Commit): waiting on index
	// writes. CommitMS is the Commit part of it.
	IndexWaitMS float64 `json:"index_wait_ms"`
	CommitMS    float64 `json:"commit_ms"`
	// ReadClientCPUMS and ReadServerCPUMS are the CPU times of the job and
	// of DynamoDB Local until the last Query returned; DedupeClientCPUMS
	// and DedupeServerCPUMS from then to the return of Commit (lookups,
	// claims, aggregation); the rest of the run (encoding, publishing)
	// is the difference to the totals.
	ReadClientCPUMS   float64 `json:"read_client_cpu_ms"`
	ReadServerCPUMS   float64 `json:"read_server_cpu_ms"`
	DedupeClientCPUMS float64 `json:"dedupe_client_cpu_ms"`
	DedupeServerCPUMS float64 `json:"dedupe_server_cpu_ms"`
	// LookupMS adds up the Lookup calls' durations; they run in the
	// background, report.concurrency at a time.
	LookupMS float64 `json:"lookup_ms"`
	// Requests are the run's requests by operation and table.
	Requests  map[string]opCount `json:"requests"`
	LoadStart string             `json:"loadavg_start"`
	LoadEnd   string             `json:"loadavg_end"`
}

// ddbSplit delivers a period of n transactions over 8 shards (report
// concurrency 8, line items on) runs times, each with a fresh state table
// (so that every run writes every claim), over one data table, filled
// once. With table set, that data table is used, and filled only when
// Init creates it (a table left by an earlier invocation with -keep
// saves the fill).
func (b *bench) ddbSplit(ctx context.Context, n, runs int, table string) error {
	const shards, concurrency = 8, 8
	pid, _ := strconv.Atoi(os.Getenv(ddbPIDEnv))
	d, fresh, err := b.splitTables(ctx, table, "")
	if err != nil {
		return err
	}
	if fresh {
		b.logf("ddbsplit: filling %s with %d transactions over %d shards", d.table, n, shards)
		if _, err := d.fill(ctx, n, 3000, benchPeriod.Start, benchPeriod.End, shards); err != nil {
			return err
		}
	}
	for r := range runs {
		d, _, err := b.splitTables(ctx, d.table, d.table)
		if err != nil {
			return err
		}
		tm := &timings{pid: pid}
		src := &timedSource{Source: d.store, t: tm}
		ix := &timedIndex{Store: d.store, t: tm}
		d.cnt.reset()
		row := splitRow{Run: r + 1, Items: n, Shards: shards, Concurrency: concurrency, LoadStart: loadavg()}
		srv0 := procCPU(pid)
		cpu0 := selfCPU()
		tm.start = time.Now()
		tm.readCPU, tm.readSrv = cpu0, srv0
		res, took, err := b.runJobWith(ctx, d, fmt.Sprintf("split-%d", r), shards, concurrency, true, benchNow, src, ix)
		if err != nil {
			return err
		}
		row.ClientCPUMS = ms(selfCPU() - cpu0)
		if srv0 >= 0 {
			row.ServerCPUMS = ms(procCPU(pid) - srv0)
		} else {
			row.ServerCPUMS = -1
		}
		row.LoadEnd = loadavg()
		if len(res.Periods) != 1 || res.Periods[0].Manifest.Transactions != int64(n) {
			return fmt.Errorf("ddbsplit: the run billed %+v, want one period of %d", res.Periods, n)
		}
		row.RunMS = ms(took)
		tm.mu.Lock()
		row.ReadMS = ms(tm.lastQuery.Sub(tm.start))
		row.DedupeMS = ms(tm.committed.Sub(tm.newWriter))
		row.IndexWaitMS, row.CommitMS, row.LookupMS = ms(tm.wait), ms(tm.commit), ms(tm.lookup)
		row.ReadClientCPUMS, row.ReadServerCPUMS = ms(tm.readCPU-cpu0), ms(tm.readSrv-srv0)
		row.DedupeClientCPUMS, row.DedupeServerCPUMS = ms(tm.commitCPU-tm.readCPU), ms(tm.commitSrv-tm.readSrv)
		tm.mu.Unlock()
		row.Requests = d.cnt.reset()
		b.logf("ddbsplit run %d: %.1f s, client CPU %.1f s, server CPU %.1f s, index wait %.1f s",
			r+1, row.RunMS/1000, row.ClientCPUMS/1000, row.ServerCPUMS/1000, row.IndexWaitMS/1000)
		b.res.Split = append(b.res.Split, row)
	}
	return nil
}

// splitTables returns the tables of ddbsplit: data table `table` (a new
// name when ""), and a new state table. fresh is whether the data table
// was created (it then needs filling). reuse names a data table known to
// exist.
func (b *bench) splitTables(ctx context.Context, table, reuse string) (*ddbBench, bool, error) {
	if table == "" {
		table = "bench-split-" + randomHex(4)
	}
	d, err := b.newTablesNamed(ctx, table, "bench-split-state-"+randomHex(4), 8)
	if err != nil {
		return nil, false, err
	}
	return d, reuse == "" && !d.existed, nil
}

// procCPU is process pid's user + system CPU time (/proc/PID/stat), -1
// when pid is 0 or unreadable.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	// Fields after the command name (in parentheses, may hold spaces):
	// state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
}

// timings are what the timed wrappers saw during one run.
type timings struct {
	mu                   sync.Mutex
	start, lastQuery     time.Time
	newWriter, committed time.Time
	wait, commit, lookup time.Duration
	// CPU times (this process, DynamoDB Local) at the last Query's return
	// and at Commit's.
	pid                  int
	readCPU, readSrv     time.Duration
	commitCPU, commitSrv time.Duration
}

func (t *timings) add(d *time.Duration, since time.Time) {
	t.mu.Lock()
	*d += time.Since(since)
	t.mu.Unlock()
}

// timedSource records when the last Query returned.
type timedSource struct {
	collect.Source
	t *timings
}

func (s *timedSource) Query(ctx context.Context, pk, after string, fn func(page []item.Item) error) error {
	err := s.Source.Query(ctx, pk, after, fn)
	cpu, srv := selfCPU(), procCPU(s.t.pid)
	s.t.mu.Lock()
	s.t.lastQuery = time.Now()
	s.t.readCPU, s.t.readSrv = cpu, srv
	s.t.mu.Unlock()
	return err
}

// timedIndex times the store's index calls; it is a collect.SightingIndex
// as the store is.
type timedIndex struct {
	*rjddb.Store
	t *timings
}

var _ collect.SightingIndex = (*timedIndex)(nil)

func (x *timedIndex) Lookup(ctx context.Context, job string, ids []string) ([]collect.Claim, error) {
	defer x.t.add(&x.t.lookup, time.Now())
	return x.Store.Lookup(ctx, job, ids)
}

func (x *timedIndex) NewClaimWriter(ctx context.Context, job string, p report.Period, expires, sweep time.Time) (collect.ClaimWriter, error) {
	start := time.Now()
	x.t.mu.Lock()
	x.t.newWriter = start
	x.t.mu.Unlock()
	defer x.t.add(&x.t.wait, start)
	w, err := x.Store.NewClaimWriter(ctx, job, p, expires, sweep)
	if err != nil {
		return nil, err
	}
	return &timedWriter{w: w, t: x.t}, nil
}

// timedWriter adds the time spent in its calls to the run's index wait.
type timedWriter struct {
	w collect.ClaimWriter
	t *timings
}

func (w *timedWriter) Add(id string, fp [collect.FPLen]byte, write bool) error {
	defer w.t.add(&w.t.wait, time.Now())
	return w.w.Add(id, fp, write)
}

func (w *timedWriter) Release(id string) error {
	defer w.t.add(&w.t.wait, time.Now())
	return w.w.Release(id)
}

func (w *timedWriter) Previous() iter.Seq2[string, error] { return w.w.Previous() }

func (w *timedWriter) Commit() error {
	start := time.Now()
	err := w.w.Commit()
	d := time.Since(start)
	cpu, srv := selfCPU(), procCPU(w.t.pid)
	w.t.mu.Lock()
	w.t.commitCPU, w.t.commitSrv = cpu, srv
	w.t.wait += d
	w.t.commit += d
	w.t.committed = time.Now()
	w.t.mu.Unlock()
	return err
}

func (w *timedWriter) Abort() { w.w.Abort() }

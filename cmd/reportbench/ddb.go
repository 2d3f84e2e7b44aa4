package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	rjddb "github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// ddbEnv is DynamoDB Local, as scripts/servers.sh exports it.
const ddbEnv = "RJTEST_DYNAMODB_ENDPOINT"

// ddbBench is a pair of fresh tables on DynamoDB Local, with every request
// counted.
type ddbBench struct {
	cnt          *counting
	store        *rjddb.Store
	table, state string
	// existed: the data table was there before Init.
	existed bool
}

func (b *bench) newTables(ctx context.Context, name string, writers int) (*ddbBench, error) {
	suffix := randomHex(4)
	return b.newTablesNamed(ctx, "bench-"+name+"-"+suffix, "bench-"+name+"-state-"+suffix, writers)
}

// newTablesNamed opens the store over data table `table` and state table
// `state`, creating either when missing.
func (b *bench) newTablesNamed(ctx context.Context, table, state string, writers int) (*ddbBench, error) {
	// DynamoDB Local 3 accepts only alphanumeric access keys.
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "rjbench", "AWS_SECRET_ACCESS_KEY": "rjbench", "AWS_REGION": "us-east-1"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	client, err := rjddb.NewClient(ctx, rjddb.ClientConfig{Region: "us-east-1", Endpoint: b.ddb})
	if err != nil {
		return nil, err
	}
	d := &ddbBench{table: table, state: state}
	_, err = client.DescribeTable(ctx, &awsddb.DescribeTableInput{TableName: aws.String(table)})
	d.existed = err == nil
	d.cnt = newCounting(client, map[string]string{d.table: "data", d.state: "state"}, report.Partitions(benchPeriod, 8))
	d.store, err = rjddb.New(d.cnt, rjddb.Options{Table: d.table, StateTable: d.state, WriteConcurrency: writers,
		WaitMinDelay: 50 * time.Millisecond, WaitMaxDelay: 200 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if err := d.store.Init(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// fill writes n generated transactions recorded in [from, to).
func (d *ddbBench) fill(ctx context.Context, n int, seed int64, from, to time.Time, shards int) (time.Duration, error) {
	start := time.Now()
	st, err := ingest.Generate(ctx, d.store, ingest.GenerateOptions{N: n, Agencies: benchAgencies, Seed: seed,
		From: from, To: to, Shards: shards, BatchSize: 1000})
	if err == nil && st.Written != n {
		err = fmt.Errorf("generate: wrote %d of %d", st.Written, n)
	}
	return time.Since(start), err
}

// runJob runs job `name` once at now on d, delivering (or rechecking) the
// benchmark period, with its reports in a temp folder.
func (b *bench) runJob(ctx context.Context, d *ddbBench, name string, shards, concurrency int, lineItems bool, now time.Time) (job.Result, time.Duration, error) {
	return b.runJobWith(ctx, d, name, shards, concurrency, lineItems, now, d.store, d.store)
}

// runJobWith is runJob reading from src and deduping with index (d.store
// wrapped, to time its calls).
func (b *bench) runJobWith(ctx context.Context, d *ddbBench, name string, shards, concurrency int, lineItems bool, now time.Time,
	src collect.Source, index collect.Index) (job.Result, time.Duration, error) {
	dir, err := b.workdir("sink-" + name)
	if err != nil {
		return job.Result{}, 0, err
	}
	fs, err := filesink.New(dir)
	if err != nil {
		return job.Result{}, 0, err
	}
	j := &job.Job{
		Config: job.Config{
			Name: name, Period: time.Hour, Lateness: 2 * time.Minute, Start: benchPeriod.Start, MaxPeriods: 1,
			RecheckAfter: []time.Duration{time.Hour}, DedupeWindow: 35 * 24 * time.Hour, Shards: shards,
			Concurrency: concurrency, LineItems: lineItems, AgencyFiles: encode.Formats{CSV: true},
			Rates: pricing.Flat(1000), Version: "reportbench", SinkURL: "file://" + dir,
		},
		Source: src, Index: index, State: d.store, Bucket: sink.New(fs),
		Owner: "reportbench/" + name, RunID: randomHex(6), Log: slog.New(slog.DiscardHandler),
	}
	start := time.Now()
	res, err := j.Run(ctx, job.RunOptions{Now: now})
	return res, time.Since(start), err
}

// growthRow is the cost of reporting 10k new transactions from a table of
// Old older ones: the job's incremental read, and a Scan with a
// FilterExpression (the seed's first attempt) for comparison.
type growthRow struct {
	Old, New int
	// Incremental path: the job's first delivery of the new period, by
	// growthRuns jobs in turn; RunMS is the fastest, RunsMS all of them.
	RunMS          float64            `json:"run_ms"`
	RunsMS         []float64          `json:"runs_ms"`
	ItemsRead      int64              `json:"items_read"`
	Partitions     int                `json:"partitions"`
	ReadAmp        float64            `json:"read_amplification"`
	Requests       map[string]opCount `json:"requests"`
	QueryRequests  int64              `json:"query_requests"`
	QueryRCU       float64            `json:"query_rcu"`
	IndexReads     opCount            `json:"index_reads"`  // BatchGetItem on the state table
	IndexWrites    opCount            `json:"index_writes"` // BatchWriteItem on the state table
	RecheckItems   int64              `json:"recheck_items_read"`
	RecheckQueries int64              `json:"recheck_query_requests"`
	// Baseline: Scan + FilterExpression on the sort key.
	ScanMS       float64 `json:"scan_ms"`
	ScanRequests int64   `json:"scan_requests"`
	ScanScanned  int64   `json:"scan_scanned"`
	ScanMatched  int64   `json:"scan_matched"`
	ScanRCU      float64 `json:"scan_rcu"`
	LoadMS       float64 `json:"load_ms"`
}

// growthRuns is how many first deliveries of the new hour each table size
// gets (by as many jobs): the fastest stands, so that a burst of load on a
// shared machine does not pass for growth.
const growthRuns = 3

// growth measures the incremental path and the Scan baseline on one table
// grown to each size of older items, 10k new ones in the benchmark period.
func (b *bench) growth(ctx context.Context, sizes []int, fresh int) error {
	d, err := b.newTables(ctx, "growth", 8)
	if err != nil {
		return err
	}
	b.logf("growth: %d new transactions", fresh)
	if _, err := d.fill(ctx, fresh, 1000, benchPeriod.Start, benchPeriod.End, 1); err != nil {
		return err
	}
	old := 0
	for i, size := range sizes {
		b.logf("growth: %d older transactions over 30 days", size)
		took, err := d.fill(ctx, size-old, int64(2000+i), benchPeriod.Start.Add(-30*24*time.Hour), benchPeriod.Start, 1)
		if err != nil {
			return err
		}
		old = size
		row := growthRow{Old: size, New: fresh, LoadMS: ms(took)}
		b.logf("growth %d: loaded in %.0f s; delivering the new hour", size, took.Seconds())
		var (
			res  job.Result
			name string
		)
		for r := range growthRuns {
			d.cnt.reset()
			name = fmt.Sprintf("growth-%d-%d", size, r)
			var took time.Duration
			if res, took, err = b.runJob(ctx, d, name, 1, 8, true, benchNow); err != nil {
				return err
			}
			if len(res.Periods) != 1 || res.Periods[0].Manifest.Transactions != int64(fresh) {
				return fmt.Errorf("growth %d: the run billed %+v, want one period of %d", size, res.Periods, fresh)
			}
			row.RunsMS = append(row.RunsMS, ms(took))
		}
		row.RunMS = slices.Min(row.RunsMS)
		row.Requests = d.cnt.reset()
		m := res.Periods[0].Manifest
		row.ItemsRead, row.Partitions = m.ItemsRead, len(m.Partitions)
		row.ReadAmp = float64(m.ItemsRead) / float64(fresh)
		q := row.Requests["Query data"]
		row.QueryRequests, row.QueryRCU = q.Requests, q.Capacity
		row.IndexReads = row.Requests["BatchGetItem state"]
		row.IndexWrites = row.Requests["BatchWriteItem state"]

		// The recheck an hour later re-reads the period once.
		b.logf("growth %d: delivered in %.2f s; recheck", size, row.RunMS/1000)
		res, _, err = b.runJob(ctx, d, name, 1, 8, true, benchNow.Add(time.Hour))
		if err != nil {
			return err
		}
		if len(res.Rechecks) != 1 {
			return fmt.Errorf("growth %d: want one recheck, got %d", size, len(res.Rechecks))
		}
		// The run also delivers the next hour (empty): only the Queries of
		// the rechecked period count.
		rc := d.cnt.reset()["Query data period"]
		row.RecheckItems, row.RecheckQueries = rc.Items, rc.Requests

		b.logf("growth %d: Scan + FilterExpression baseline", size)
		start := time.Now()
		if err := d.scanBaseline(ctx); err != nil {
			return err
		}
		row.ScanMS = ms(time.Since(start))
		s := d.cnt.reset()["Scan data"]
		row.ScanRequests, row.ScanScanned, row.ScanMatched, row.ScanRCU = s.Requests, s.Scanned, s.Items, s.Capacity
		if row.ScanMatched != int64(fresh) {
			return fmt.Errorf("growth %d: the scan matched %d items, want %d", size, row.ScanMatched, fresh)
		}
		b.res.Growth = append(b.res.Growth, row)
	}
	return nil
}

// scanBaseline reads the new items as seed 001 first did: a Scan of the
// whole table with a FilterExpression keeping the sort keys of the period,
// page after page. DynamoDB reads (and bills) every item before filtering.
func (d *ddbBench) scanBaseline(ctx context.Context) error {
	in := &awsddb.ScanInput{
		TableName:                aws.String(d.table),
		FilterExpression:         aws.String("#sk >= :from AND #sk < :to"),
		ExpressionAttributeNames: map[string]string{"#sk": rjddb.DefaultSortAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":from": &types.AttributeValueMemberS{Value: benchPeriod.Start.Format("2006-01-02T15:04:05")},
			":to":   &types.AttributeValueMemberS{Value: benchPeriod.End.Format("2006-01-02T15:04:05")},
		},
	}
	for {
		out, err := d.cnt.Scan(ctx, in)
		if err != nil {
			return fmt.Errorf("scan baseline: %w", err)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// concRow is the DynamoDB path at one report.concurrency.
type concRow struct {
	Items       int     `json:"items"`
	Shards      int     `json:"shards"`
	Partitions  int     `json:"partitions"`
	Concurrency int     `json:"concurrency"`
	ReadMS      float64 `json:"read_ms"`     // collect.Read alone
	ReadCPUMS   float64 `json:"read_cpu_ms"` // this process's CPU meanwhile
	RunMS       float64 `json:"run_ms"`      // the whole run, line items on
	Queries     int64   `json:"query_requests"`
	// IndexWrites and IndexReads are the run's dedupe index requests.
	IndexWrites opCount `json:"index_writes"`
	IndexReads  opCount `json:"index_reads"`
	EmptyParts  int     `json:"empty_partitions"`
}

// concurrency reads and delivers a period of 8 shards x 4 quarters at
// report.concurrency 1 and 8.
func (b *bench) concurrency(ctx context.Context, n int) error {
	d, err := b.newTables(ctx, "conc", 8)
	if err != nil {
		return err
	}
	const shards = 8
	b.logf("concurrency: %d transactions over %d shards", n, shards)
	if _, err := d.fill(ctx, n, 3000, benchPeriod.Start, benchPeriod.End, shards); err != nil {
		return err
	}
	for _, c := range []int{1, 8} {
		row := concRow{Items: n, Shards: shards, Concurrency: c}
		dir, err := b.workdir(fmt.Sprintf("conc-read-%d", c))
		if err != nil {
			return err
		}
		d.cnt.reset()
		cpu0 := selfCPU()
		start := time.Now()
		col, err := collect.Read(ctx, collect.Config{Shards: shards, Concurrency: c, Dir: dir}, d.store, benchPeriod)
		if err != nil {
			return err
		}
		row.ReadMS = ms(time.Since(start))
		row.ReadCPUMS = ms(selfCPU() - cpu0)
		row.Partitions = len(col.Partitions)
		if col.ItemsRead != int64(n) {
			return fmt.Errorf("concurrency %d: read %d items, want %d", c, col.ItemsRead, n)
		}
		col.Close()
		q := d.cnt.reset()["Query data"]
		row.Queries = q.Requests
		row.EmptyParts = 4 // the plain key of each quarter: read, never written by a sharding producer
		_, took, err := b.runJob(ctx, d, fmt.Sprintf("conc-%d", c), shards, c, true, benchNow)
		if err != nil {
			return err
		}
		row.RunMS = ms(took)
		counts := d.cnt.reset()
		row.IndexWrites, row.IndexReads = counts["BatchWriteItem state"], counts["BatchGetItem state"]
		b.res.Concurrency = append(b.res.Concurrency, row)
	}
	return nil
}

// ddbIngest writes n generated transactions into a fresh table with each
// number of concurrent BatchWriteItem calls (25 items each).
func (b *bench) ddbIngest(ctx context.Context, n int, writers []int) error {
	for _, w := range writers {
		d, err := b.newTables(ctx, fmt.Sprintf("ingest%d", w), w)
		if err != nil {
			return err
		}
		b.logf("dynamodb ingest: %d records, %d writers", n, w)
		took, err := d.fill(ctx, n, 4000, benchPeriod.Start, benchPeriod.End, 1)
		if err != nil {
			return err
		}
		c := d.cnt.reset()["BatchWriteItem data"]
		b.res.DDBIngest = append(b.res.DDBIngest, ddbIngestRow{Size: n, Writers: w, PerSec: float64(n) / took.Seconds(),
			Requests: c.Requests, WCU: c.Capacity})
	}
	return nil
}

type ddbIngestRow struct {
	Size     int     `json:"size"`
	Writers  int     `json:"writers"`
	PerSec   float64 `json:"records_per_s"`
	Requests int64   `json:"batch_write_requests"`
	WCU      float64 `json:"wcu"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// selfCPU is this process's user + system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

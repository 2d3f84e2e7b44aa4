package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/s3sink"
	"github.com/reportjob/reportjob/internal/sink"
)

// The scaling scenario (issue 35, "How far one process goes") measures
// the three rates a period's delivery is made of, each on its own, with
// the job's own code and the server's CPU beside the job's: the read of a
// period (collect.Read: Query, parse, validate, external sort) at
// report.concurrency scaleConc over periods written with scaleShards
// shards; PUTs through the job's S3 sink (sink.Bucket over s3sink, as the
// publisher uploads a period's agency files) at scaleConc in flight
// against versitygw; and the dedupe index's claim writes (the DynamoDB
// claim writer, IndexConcurrency scaleConc).
var (
	scaleShards = []int{1, 4, 16}
	scaleConc   = []int{1, 4, 16, 64}
)

// Environment of the scaling scenario: versitygw as scripts/servers.sh
// exports it, and its process id (scripts/bench.sh sets it) for its CPU.
const (
	s3Env       = "RJTEST_S3_ENDPOINT"
	s3KeyEnv    = "RJTEST_S3_ACCESS_KEY"
	s3SecretEnv = "RJTEST_S3_SECRET_KEY"
	s3PIDEnv    = "RJBENCH_S3_PID"
)

// scalePutBytes is the size of each object PUT: an agency's CSV of a few
// transactions, the typical object of a period of many agencies.
const scalePutBytes = 2048

// scaleRow is one point of the scaling scenario.
type scaleRow struct {
	// Kind is "read", "put" or "claims".
	Kind string `json:"kind"`
	// N is the items read, objects put or claims written.
	N           int     `json:"n"`
	Shards      int     `json:"shards,omitempty"`
	Concurrency int     `json:"concurrency"`
	WallMS      float64 `json:"wall_ms"`
	PerSec      float64 `json:"per_s"`
	// ClientCPUMS is this process's CPU (it runs nothing else meanwhile);
	// ServerCPUMS is the server's (DynamoDB Local or versitygw), -1 when
	// its pid is unknown.
	ClientCPUMS float64 `json:"client_cpu_ms"`
	ServerCPUMS float64 `json:"server_cpu_ms"`
	// Requests and Capacity: Query requests and RCU (read), BatchWriteItem
	// requests and WCU on the state table (claims).
	Requests  int64   `json:"requests,omitempty"`
	Capacity  float64 `json:"capacity_units,omitempty"`
	LoadStart string  `json:"loadavg_start"`
	LoadEnd   string  `json:"loadavg_end"`
}

// scaling runs the measurements of parts ("read", "claims", "put"; all
// when empty): n items per read point, n/4 claims per claim point, and
// min(n/40, 5000) (at least 100) PUTs per concurrency. Without versitygw
// ($RJTEST_S3_ENDPOINT) the PUTs are skipped.
func (b *bench) scaling(ctx context.Context, n int, parts []string) error {
	if len(parts) == 0 {
		parts = scaleParts
	}
	ddbPID, _ := strconv.Atoi(os.Getenv(ddbPIDEnv))
	if slices.Contains(parts, "read") {
		if err := b.scaleReads(ctx, n, ddbPID); err != nil {
			return err
		}
	}
	if slices.Contains(parts, "claims") {
		if err := b.scaleClaims(ctx, max(n/4, 100), ddbPID); err != nil {
			return err
		}
	}
	if !slices.Contains(parts, "put") {
		return nil
	}
	if os.Getenv(s3Env) == "" {
		b.res.Skipped = append(b.res.Skipped, "scaling PUTs: no versitygw ("+s3Env+" unset)")
		return nil
	}
	return b.scalePuts(ctx, min(max(n/40, 100), 5000))
}

// scaleParts are the parts of the scaling scenario.
var scaleParts = []string{"read", "claims", "put"}

// scaleReads reads a period of n items written over each of scaleShards
// at each of scaleConc.
func (b *bench) scaleReads(ctx context.Context, n, ddbPID int) error {
	for _, shards := range scaleShards {
		d, err := b.newTables(ctx, fmt.Sprintf("scale%d", shards), 16)
		if err != nil {
			return err
		}
		b.logf("scaling: filling %d transactions over %d shards", n, shards)
		if _, err := d.fill(ctx, n, int64(5000+shards), benchPeriod.Start, benchPeriod.End, shards); err != nil {
			return err
		}
		for _, c := range scaleConc {
			row := scaleRow{Kind: "read", N: n, Shards: shards, Concurrency: c}
			err := b.measure(&row, ddbPID, func() error {
				dir, err := b.workdir(fmt.Sprintf("scale-read-%d-%d", shards, c))
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				col, err := collect.Read(ctx, collect.Config{Shards: shards, Concurrency: c, Dir: dir}, d.store, benchPeriod)
				if err != nil {
					return err
				}
				defer col.Close()
				if col.ItemsRead != int64(n) {
					return fmt.Errorf("read %d items, want %d", col.ItemsRead, n)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("scaling read, %d shards, concurrency %d: %w", shards, c, err)
			}
			q := d.cnt.reset()["Query data"]
			row.Requests, row.Capacity = q.Requests, q.Capacity
			b.res.Scaling = append(b.res.Scaling, row)
		}
	}
	return nil
}

// scaleClaims writes claims claims into a fresh state table at each of
// scaleConc.
func (b *bench) scaleClaims(ctx context.Context, claims, ddbPID int) error {
	for _, c := range scaleConc {
		d, err := b.newTables(ctx, fmt.Sprintf("claims%d", c), c)
		if err != nil {
			return err
		}
		row := scaleRow{Kind: "claims", N: claims, Concurrency: c}
		err = b.measure(&row, ddbPID, func() error { return writeClaims(ctx, d, claims) })
		if err != nil {
			return fmt.Errorf("scaling claims, concurrency %d: %w", c, err)
		}
		w := d.cnt.reset()["BatchWriteItem state"]
		row.Requests, row.Capacity = w.Requests, w.Capacity
		b.res.Scaling = append(b.res.Scaling, row)
	}
	return nil
}

// scalePuts PUTs puts objects into a new bucket at each of scaleConc.
func (b *bench) scalePuts(ctx context.Context, puts int) error {
	s3PID, _ := strconv.Atoi(os.Getenv(s3PIDEnv))
	bucket, err := b.scaleBucket(ctx)
	if err != nil {
		return err
	}
	for _, c := range scaleConc {
		row := scaleRow{Kind: "put", N: puts, Concurrency: c}
		err := b.measure(&row, s3PID, func() error { return putObjects(ctx, bucket, fmt.Sprintf("transactions-c%d", c), puts, c) })
		if err != nil {
			return fmt.Errorf("scaling PUTs, %d in flight: %w", c, err)
		}
		b.res.Scaling = append(b.res.Scaling, row)
	}
	return nil
}

// measure runs fn, filling row's wall and CPU times, rate and load.
func (b *bench) measure(row *scaleRow, serverPID int, fn func() error) error {
	row.LoadStart = loadavg()
	srv0, cpu0 := procCPU(serverPID), selfCPU()
	start := time.Now()
	if err := fn(); err != nil {
		return err
	}
	took := time.Since(start)
	row.WallMS, row.ClientCPUMS = ms(took), ms(selfCPU()-cpu0)
	row.ServerCPUMS = -1
	if srv0 >= 0 {
		row.ServerCPUMS = ms(procCPU(serverPID) - srv0)
	}
	row.PerSec = float64(row.N) / took.Seconds()
	row.LoadEnd = loadavg()
	b.logf("scaling %s: %d at %d (shards %d): %.0f/s, CPU %.1f s, server %.1f s",
		row.Kind, row.N, row.Concurrency, row.Shards, row.PerSec, row.ClientCPUMS/1000, row.ServerCPUMS/1000)
	return nil
}

// writeClaims writes n claims of one period through the store's claim
// writer, as the dedupe phase of a first delivery does.
func writeClaims(ctx context.Context, d *ddbBench, n int) error {
	expires := benchPeriod.End.Add(35 * 24 * time.Hour)
	w, err := d.store.NewClaimWriter(ctx, "scale", benchPeriod, expires, benchPeriod.Start)
	if err != nil {
		return err
	}
	var fp [collect.FPLen]byte
	for i := range n {
		fp[0], fp[1], fp[2] = byte(i), byte(i>>8), byte(i>>16)
		if err := w.Add(fmt.Sprintf("tx-%09d", i), fp, true); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit()
}

// scaleBucket is a new bucket on versitygw, through the job's S3 sink.
func (b *bench) scaleBucket(ctx context.Context) (*sink.Bucket, error) {
	client, err := s3sink.NewClient(ctx, s3sink.ClientConfig{Region: "us-east-1", Endpoint: os.Getenv(s3Env), PathStyle: true,
		AccessKeyID: os.Getenv(s3KeyEnv), SecretAccessKey: os.Getenv(s3SecretEnv)})
	if err != nil {
		return nil, err
	}
	name := "rjbench-scale-" + randomHex(4)
	if err := s3sink.EnsureBucket(ctx, client, name, "us-east-1"); err != nil {
		return nil, err
	}
	s, err := s3sink.New(client, s3sink.Options{Bucket: name, Prefix: "reports"})
	if err != nil {
		return nil, err
	}
	return sink.New(s), nil
}

// putObjects PUTs n objects of scalePutBytes, one per agency folder of the
// period, named name.csv, inFlight at a time, as the publisher uploads a
// period's agency files.
func putObjects(ctx context.Context, bucket *sink.Bucket, name string, n, inFlight int) error {
	body := make([]byte, scalePutBytes)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range inFlight {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				key := report.AgencyPrefix(fmt.Sprintf("ag-%06d", i), benchPeriod) + name + ".csv"
				if _, err := bucket.PutBytes(ctx, key, body, sink.PutOptions{ContentType: encode.TypeCSV, Defer: true}); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// writeScalingMarkdown prints the scaling rows: one table per kind.
func writeScalingMarkdown(w io.Writer, rows []scaleRow) {
	if len(rows) == 0 {
		return
	}
	heads := map[string]string{
		"read":   "the read of one hourly period from DynamoDB Local (collect.Read: Query, parse, validate, external sort)",
		"claims": "dedupe index claim writes into DynamoDB Local (the claim writer, BatchWriteItem of 25)",
		"put":    "PUTs of 2 KiB objects through the job's S3 sink against versitygw (posix)",
	}
	for _, kind := range []string{"read", "claims", "put"} {
		var these []scaleRow
		for _, x := range rows {
			if x.Kind == kind {
				these = append(these, x)
			}
		}
		if len(these) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n### Scaling: %s\n\n", heads[kind])
		fmt.Fprintln(w, "| n | shards | in flight | wall s | per s | job CPU s | server CPU s | requests | capacity units | load at start | at end |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
		for _, x := range these {
			fmt.Fprintf(w, "| %s | %d | %d | %.2f | %s | %.2f | %.2f | %d | %.0f | %s | %s |\n", count(x.N), x.Shards, x.Concurrency,
				x.WallMS/1000, count(int(x.PerSec)), x.ClientCPUMS/1000, x.ServerCPUMS/1000, x.Requests, x.Capacity, x.LoadStart, x.LoadEnd)
		}
	}
}

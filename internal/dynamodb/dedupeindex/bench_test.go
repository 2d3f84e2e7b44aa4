package dedupeindex

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// latencyAPI adds a fixed delay to each write request, as the network
// round trip to DynamoDB would (DynamoDB Local answers in well under a
// millisecond when idle).
type latencyAPI struct {
	clientAPI
	rtt time.Duration
}

func (a latencyAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	time.Sleep(a.rtt)
	return a.clientAPI.BatchWriteItem(ctx, in, opts...)
}

func (a latencyAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	time.Sleep(a.rtt)
	return a.clientAPI.PutItem(ctx, in, opts...)
}

// noServerWrites answers every BatchWriteItem after rtt without sending
// it: the claim writer's pipeline alone, as against a DynamoDB whose
// capacity is not the limit (the chunks and the head still go to
// DynamoDB Local).
type noServerWrites struct{ latencyAPI }

func (a noServerWrites) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	time.Sleep(a.rtt)
	return &dynamodb.BatchWriteItemOutput{}, nil
}

// spin burns about d of CPU: the caller's own work per transaction
// (deciding, aggregating, encoding) between two Adds.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// BenchmarkClaimWriter writes the claims of a period of 20,000 new
// transactions (100,000 without the server) (Add with write=true, then Commit) against DynamoDB Local,
// with 8 batch writes in flight (report.concurrency's default) and 20 µs
// of the caller's own work per Add; rtt=5ms adds 5 ms to each write
// request, as a real DynamoDB's round trip would; noserver answers the
// claims' BatchWriteItem after 5 ms without sending them (DynamoDB Local's
// CPU, on the same cores, is then out of the picture). Run it with
//
//	go test -run '^$' -bench ClaimWriter -benchtime 1x -count 6 ./internal/dynamodb/dedupeindex/
func BenchmarkClaimWriter(b *testing.B) {
	const work = 20 * time.Microsecond
	for _, tc := range []struct {
		name     string
		n        int
		rtt      time.Duration
		noServer bool
	}{{"rtt=0", 20_000, 0, false}, {"rtt=5ms", 20_000, 5 * time.Millisecond, false}, {"noserver-rtt=5ms", 100_000, 5 * time.Millisecond, true}} {
		b.Run(tc.name, func(b *testing.B) {
			n, ids := tc.n, ixUUIDs(tc.n)
			var api clientAPI = testClient(b)
			switch {
			case tc.noServer:
				api = noServerWrites{latencyAPI{clientAPI: api, rtt: tc.rtt}}
			case tc.rtt > 0:
				api = latencyAPI{clientAPI: api, rtt: tc.rtt}
			}
			s := newIndex(b, api, func(r *batch.Retrier) { r.Concurrency = 8 })
			run := 0
			for b.Loop() {
				run++
				w, err := s.NewClaimWriter(b.Context(), fmt.Sprintf("bench-%d", run), hourOf(ixP0), ixExp, ixNow)
				if err != nil {
					b.Fatal(err)
				}
				for _, id := range ids {
					spin(work)
					if err := w.Add(id, indextest.FP(id, 0), true); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}

package report_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// The job-level tests run report.Job on a real embedded store and a real
// folder sink, with a fake lease clock (Job.Clock) and report clock
// (RunOptions.Now). The only fake is a Source wrapper that holds a Build
// at a chosen partition: a stall at an exact step no server can produce.

const jobName = "billing"

var day0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func at(h, m int) time.Time {
	return day0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

func openStore(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newSink(t *testing.T) *filesink.Sink {
	t.Helper()
	sk, err := filesink.New(filepath.Join(t.TempDir(), "reports"))
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// testStore is what the job-level tests need of a store backend.
type testStore interface {
	report.Source
	checkpoint.Store
	PutItems(ctx context.Context, items []item.Item) error
}

// backends returns an empty store on each backend: embedded, and DynamoDB
// Local when its endpoint is set (fresh tables, dropped at the end).
func backends(t *testing.T) map[string]func(t *testing.T) testStore {
	return map[string]func(t *testing.T) testStore{
		"embedded": func(t *testing.T) testStore { return openStore(t) },
		"dynamodb": func(t *testing.T) testStore {
			endpoint := testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
			if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
				t.Setenv("AWS_ACCESS_KEY_ID", "rjtestaccess") // DynamoDB Local takes any [A-Za-z0-9] key
				t.Setenv("AWS_SECRET_ACCESS_KEY", "rjtestsecret")
			}
			client, err := dynamodb.NewClient(t.Context(), dynamodb.ClientConfig{Region: "us-east-1", Endpoint: endpoint})
			if err != nil {
				t.Fatal(err)
			}
			base := fmt.Sprintf("rj_run_%d", time.Now().UnixNano())
			st, err := dynamodb.New(client, dynamodb.Options{Table: base + "_data", StateTable: base + "_state",
				WaitMinDelay: 20 * time.Millisecond, WaitMaxDelay: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				for _, n := range []string{base + "_data", base + "_state"} {
					client.DeleteTable(context.Background(), &awsddb.DeleteTableInput{TableName: &n})
				}
			})
			if err := st.Init(t.Context()); err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
}

// putHourly writes n valid purchases in each hour of [from, to).
func putHourly(t *testing.T, st testStore, from, to time.Time, n int) int {
	t.Helper()
	var items []item.Item
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("tx-%s-%d", h.Format("0215"), i)
			rec := h.Add(time.Duration(i*7) * time.Minute)
			pk, sk := keys.ForTransaction(id, rec, 1)
			items = append(items, item.Item{PK: pk, SK: sk, Attrs: map[string]item.Value{
				item.AttrTransactionID: item.S(id),
				item.AttrAgencyID:      item.S(fmt.Sprintf("agency-%d", i%3)),
				item.AttrAmount:        item.N("19.99"),
				item.AttrCurrency:      item.S("USD"),
			}})
		}
	}
	if err := st.PutItems(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return len(items)
}

// clock is a settable fake clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// holdSource passes queries to a Source, except that a Query of partition
// pk first says so on entered and waits until release is closed (or its
// context ends).
type holdSource struct {
	report.Source
	pk      string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHoldSource(src report.Source, pk string) *holdSource {
	return &holdSource{Source: src, pk: pk, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	if pk == h.pk {
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Source.Query(ctx, pk, after, fn)
}

// slowSource delays every Query by d.
type slowSource struct {
	report.Source
	d time.Duration
}

func (s slowSource) Query(ctx context.Context, pk, after string, fn func([]item.Item) error) error {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Source.Query(ctx, pk, after, fn)
}

func newJob(owner string, src report.Source, sk report.Sink, cps checkpoint.Store, clk func() time.Time) *report.Job {
	log := slog.New(slog.DiscardHandler)
	return &report.Job{
		Name: jobName, Period: time.Hour, Lateness: 2 * time.Minute, Start: day0, MaxPeriods: 96,
		Builder:     report.NewBuilder(report.Config{Job: jobName, Concurrency: 2, DefaultBPS: 1000}, src, sk, log),
		Checkpoints: cps, Owner: owner, LeaseTTL: time.Minute, Clock: clk, Log: log,
	}
}

func load(t *testing.T, cps checkpoint.Store) checkpoint.State {
	t.Helper()
	st, err := cps.Load(context.Background(), jobName)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func manifestStarts(ms []*report.Manifest) []time.Time {
	var out []time.Time
	for _, m := range ms {
		out = append(out, m.PeriodStart)
	}
	return out
}

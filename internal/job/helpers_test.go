package job_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/s3sink"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
	"github.com/reportjob/reportjob/internal/testenv"
)

// The job-level tests run job.Job on a real store (embedded, and DynamoDB
// Local where the suite says so) and a real folder sink, with a fake lease
// clock (Job.Clock) and report clock (RunOptions.Now). The fakes are only
// what no server can do: a Source that holds a Query at a chosen
// partition (a stall at an exact step), and a sink driver that fails a
// chosen write (a crash at an exact step).

const jobName = "billing"

// day0 is in the future: DynamoDB Local deletes expired items by TTL on
// the wall clock, as DynamoDB does, so the claims of a past day would be
// gone at once.
var day0 = time.Date(2090, 3, 1, 0, 0, 0, 0, time.UTC)

func at(h, m int) time.Time {
	return day0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

func hour(h int) report.Period { return report.Period{Start: at(h, 0), End: at(h+1, 0)} }

// testStore is what the job-level tests need of a store backend.
type testStore interface {
	collect.Source
	collect.Index
	checkpoint.Store
	PutItems(ctx context.Context, items []item.Item) error
}

func openEmbedded(t *testing.T) testStore {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openDynamoDB returns fresh tables on DynamoDB Local, dropped at the end.
func openDynamoDB(t *testing.T) testStore {
	t.Helper()
	endpoint := testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		t.Setenv("AWS_ACCESS_KEY_ID", "rjtestaccess")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "rjtestsecret")
	}
	client, err := dynamodb.NewClient(t.Context(), dynamodb.ClientConfig{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("rj_job_%d", time.Now().UnixNano())
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
}

// stack is a store and a sink to run the job on.
type stack struct {
	store func(t *testing.T) testStore
	sink  func(t *testing.T) driver.Bucket
}

// backends runs fn on each stack: the embedded file with a folder, and
// DynamoDB Local with versitygw over HTTPS (the SDK's aws-chunked uploads
// with trailing checksums, as on AWS).
func backends(t *testing.T, fn func(t *testing.T, s stack)) {
	t.Run("embedded", func(t *testing.T) { fn(t, stack{openEmbedded, openFolder}) })
	t.Run("dynamodb", func(t *testing.T) { fn(t, stack{openDynamoDB, openS3}) })
}

func openFolder(t *testing.T) driver.Bucket {
	t.Helper()
	fs, err := filesink.New(filepath.Join(t.TempDir(), "reports"))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// openS3 returns a fresh bucket on versitygw over HTTPS, under a prefix.
func openS3(t *testing.T) driver.Bucket {
	t.Helper()
	srv := testenv.RequireS3TLS(t)
	c, err := s3sink.NewClient(context.Background(), s3sink.ClientConfig{
		Region: "us-east-1", Endpoint: srv.Endpoint, PathStyle: true, CABundle: srv.CAFile,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "rjjob-" + hex.EncodeToString(b[:])
	if err := s3sink.EnsureBucket(context.Background(), c, name, "us-east-1"); err != nil {
		t.Fatal(err)
	}
	d, err := s3sink.New(c, s3sink.Options{Bucket: name, Prefix: "billing/reports", SSE: s3sink.SSEAES256})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// env is one job's store and sink.
type env struct {
	t       *testing.T
	st      testStore
	drv     *faultDriver
	bucket  *sink.Bucket
	clock   *clock
	tempDir string
}

func newEnv(t *testing.T, s stack) *env {
	t.Helper()
	drv := &faultDriver{Bucket: s.sink(t)}
	return &env{t: t, st: s.store(t), drv: drv, bucket: sink.New(drv), clock: newClock(at(100, 0)), tempDir: t.TempDir()}
}

// embeddedStack is the default stack of tests that run on one only.
var embeddedStack = stack{openEmbedded, openFolder}

// job returns a job as the default config has it: hourly, 2m lateness,
// rechecks after 1h, a 35-day dedupe window, line items, agency CSVs.
func (e *env) job(owner string) *job.Job {
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return &job.Job{
		Config: job.Config{
			Name: jobName, Period: time.Hour, Lateness: 2 * time.Minute, Start: day0, MaxPeriods: 96,
			RecheckAfter: []time.Duration{time.Hour}, DedupeWindow: 35 * 24 * time.Hour,
			Shards: 1, Concurrency: 2, LineItems: true, AgencyFiles: encode.Formats{CSV: true},
			Rates: pricing.Flat(1000), SortMemBytes: 4 << 10, TempDir: e.tempDir, Version: "test",
		},
		Source: e.st, Index: e.st, State: e.st, Bucket: e.bucket,
		Owner: owner, RunID: owner, LeaseTTL: time.Minute, Clock: e.clock.Now, Log: log,
	}
}

func (e *env) run(j *job.Job, opts job.RunOptions) job.Result {
	e.t.Helper()
	res, err := j.Run(context.Background(), opts)
	if err != nil {
		e.t.Fatalf("run at %s: %v", opts.Now.Format("15:04"), err)
	}
	return res
}

// purchase is a valid USD purchase of cents for agency, recorded at `at`.
func purchase(id, agency string, cents int64, at time.Time) item.Item {
	tx := item.Transaction{ID: id, AgencyID: agency, Kind: item.Purchase, Currency: money.Currency{Code: "USD", Digits: 2},
		Amount: cents, RecordedAt: at}
	tx.PK, tx.SK = keys.ForTransaction(id, at, 1)
	return tx.Item()
}

func (e *env) put(items ...item.Item) {
	e.t.Helper()
	if err := e.st.PutItems(context.Background(), items); err != nil {
		e.t.Fatal(err)
	}
}

// putHourly writes n purchases of 19.99 in each hour of [from, to), for
// agencies a-0..a-2.
func (e *env) putHourly(from, to time.Time, n int) int {
	e.t.Helper()
	var items []item.Item
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		for i := range n {
			items = append(items, purchase(fmt.Sprintf("tx-%s-%d", h.Format("1504"), i), fmt.Sprintf("a-%d", i%3), 1999,
				h.Add(time.Duration(i*7)*time.Minute)))
		}
	}
	e.put(items...)
	return len(items)
}

func (e *env) state() checkpoint.State {
	e.t.Helper()
	st, err := e.st.Load(context.Background(), jobName)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// objects returns every object of the sink but the monthly statements'
// (report.IsStatementKey: the periods' checks here are about the periods;
// internal/monthclose and cmd/reportjob's statements tests check them):
// key -> sha256.
func (e *env) objects() map[string]string {
	e.t.Helper()
	infos, err := e.bucket.List(context.Background(), "")
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range infos {
		if report.IsStatementKey(o.Key) {
			continue
		}
		s := sha256.Sum256([]byte(e.read(o.Key)))
		out[o.Key] = hex.EncodeToString(s[:])
	}
	return out
}

// manifest reads p's manifest whole, its parts included.
func (e *env) manifest(p report.Period) *report.Manifest {
	e.t.Helper()
	return e.readManifest(report.ManifestKey(p))
}

func (e *env) readManifest(key string) *report.Manifest {
	e.t.Helper()
	m, err := report.ReadManifest(context.Background(), []byte(e.read(key)), func(ctx context.Context, key string) ([]byte, error) {
		b, _, err := e.bucket.ReadAll(ctx, key, report.MaxPartBytes)
		return b, err
	})
	if err != nil {
		e.t.Fatalf("%s: %v", key, err)
	}
	return m
}

func (e *env) read(key string) string {
	e.t.Helper()
	b, _, err := e.bucket.ReadAll(context.Background(), key, 1<<30)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// write puts an object straight into the sink (a corruption, a stray).
func (e *env) write(key, body string) {
	e.t.Helper()
	if _, err := e.drv.Bucket.Put(context.Background(), key, strings.NewReader(body), int64(len(body)), driver.PutOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// remove deletes an object straight from the sink.
func (e *env) remove(key string) {
	e.t.Helper()
	if err := e.drv.Bucket.Delete(context.Background(), key); err != nil {
		e.t.Fatal(err)
	}
}

// checkSink checks the sink's invariant: every object is a manifest or is
// listed (or is a part named), with its size and SHA-256, by the manifest
// of its period; every
// listed object exists; no intent is left.
func (e *env) checkSink() {
	e.t.Helper()
	objs := e.objects()
	listed := map[string]string{}
	for key := range objs {
		if !strings.HasSuffix(key, "/manifest.json") {
			continue
		}
		if _, ok := report.MonthOfKey(key); ok {
			mm, err := monthclose.ParseManifest([]byte(e.read(key)))
			if err != nil {
				e.t.Fatalf("%s: %v", key, err)
			}
			for _, f := range mm.Files {
				listed[f.Key] = f.SHA256
			}
			continue
		}
		m := e.readManifest(key)
		for _, part := range m.Parts {
			listed[part.Key] = part.SHA256
		}
		for _, f := range m.Files {
			if !strings.Contains(f.Key, "period="+m.Period().Name()+"/") {
				e.t.Errorf("%s lists %s, outside its period", key, f.Key)
			}
			listed[f.Key] = f.SHA256
		}
	}
	for key, sha := range objs {
		switch {
		case strings.HasSuffix(key, "/manifest.json"):
		case report.IsIntentKey(key):
			e.t.Errorf("intent left: %s", key)
		case strings.HasPrefix(key, report.DueStatementsPrefix):
			// A period published whose month's statements a later
			// close takes in (a run cut short before its close).
		case listed[key] == "":
			e.t.Errorf("object %s is listed by no manifest", key)
		case listed[key] != sha:
			e.t.Errorf("object %s has sha256 %s, its manifest says %s", key, sha, listed[key])
		}
	}
	for key := range listed {
		if _, ok := objs[key]; !ok {
			e.t.Errorf("listed object %s is missing", key)
		}
	}
}

// keysUnder returns the sorted object keys that contain sub.
func (e *env) keysUnder(sub string) []string {
	var out []string
	for k := range e.objects() {
		if strings.Contains(k, sub) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
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

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// holdSource passes queries to a Source, except that a Query of partition
// pk first says so on entered and waits until release is closed (or its
// context ends).
type holdSource struct {
	collect.Source
	pk      string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHoldSource(src collect.Source, pk string) *holdSource {
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

// faultDriver passes calls to a real driver; failPut, when set, is asked
// before each Put and fails it with the error it returns.
type faultDriver struct {
	driver.Bucket
	mu      sync.Mutex
	failPut func(key string) error
	puts    []string
	// maxKey, when set, replaces the driver's MaxKeyLen.
	maxKey int
}

func (f *faultDriver) MaxKeyLen() int {
	if f.maxKey > 0 {
		return f.maxKey
	}
	return f.Bucket.MaxKeyLen()
}

func (f *faultDriver) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, o driver.PutOptions) (driver.Attrs, error) {
	f.mu.Lock()
	fail := f.failPut
	f.puts = append(f.puts, key)
	f.mu.Unlock()
	if fail != nil {
		if err := fail(key); err != nil {
			return driver.Attrs{}, err
		}
	}
	return f.Bucket.Put(ctx, key, body, size, o)
}

func (f *faultDriver) setFail(fn func(key string) error) {
	f.mu.Lock()
	f.failPut = fn
	f.mu.Unlock()
}

func (f *faultDriver) takePuts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.puts
	f.puts = nil
	return p
}

// osReadDir returns the names in dir.
func osReadDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

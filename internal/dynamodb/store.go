// Package dynamodb is the production store on Amazon DynamoDB: the data
// table (collect.Source, ingest.Writer) and the job state table
// (checkpoint.Store, collect.Index).
//
// Data table: HASH = Options.PartitionAttr (S), RANGE = Options.SortAttr
// (S); every other attribute is kept with its type (S or N) and exact text.
// Reads are strongly consistent Queries of one partition, never Scans.
//
// State table: HASH "job" (S), one item per job holding its checkpoint,
// lease, owed rechecks and recent restatements (checkpoint.Store), which is
// package jobstate (it documents the item layout): Store embeds a
// *jobstate.State over the state table.
//
// The state table also holds the dedupe index (collect.Index: items whose
// job key is "<job>#claim#<id>" or starts with "<job>#period#"), which is
// package dedupeindex: Store embeds a *dedupeindex.Index over the state
// table. Init turns on Time to Live on its expires_at attribute: no other
// item of the table may use that attribute.
//
// Batch calls (PutItems' BatchWriteItem, the index's BatchGetItem and
// BatchWriteItem) run through package batch, which retries unprocessed
// requests and throttling until Options.WriteDeadline.
package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reportjob/reportjob/internal/awsclient"
	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/dynamodb/dedupeindex"
	"github.com/reportjob/reportjob/internal/dynamodb/jobstate"
	"github.com/reportjob/reportjob/internal/fence"
	"github.com/reportjob/reportjob/internal/ingest"
)

var (
	_ collect.Source   = (*Store)(nil)
	_ collect.Index    = (*Store)(nil)
	_ ingest.Writer    = (*Store)(nil)
	_ checkpoint.Store = (*Store)(nil)
)

// Defaults of Options.
const (
	DefaultPartitionAttr = "quarter_hour_timestamp"
	DefaultSortAttr      = "random_timestamp"
	DefaultWriteDeadline = 2 * time.Minute
	// DefaultWriteConcurrency is how many BatchWriteItem calls one
	// PutItems call keeps in flight.
	DefaultWriteConcurrency = 4
	DefaultRetryBase        = 50 * time.Millisecond
	DefaultRetryCap         = 5 * time.Second
	DefaultWaitMinDelay     = time.Second
	DefaultWaitMaxDelay     = 10 * time.Second
	DefaultWaitTimeout      = 5 * time.Minute
)

// Log attribute keys.
const (
	logTable = "table"
	logAttr  = "attr"
)

// Options configures a Store. Zero fields take the defaults above.
type Options struct {
	// Table is the data table; StateTable holds checkpoints and leases.
	Table, StateTable string
	// PartitionAttr and SortAttr name the data table's key attributes.
	PartitionAttr, SortAttr string
	// WriteDeadline is how long PutItems keeps retrying one batch of 25
	// (unprocessed items, throttling, 5xx), counted from the batch's first
	// attempt. Items still unwritten then are reported in a
	// *ingest.WriteError. The dedupe index's batch reads and writes
	// (BatchGetItem, BatchWriteItem) retry for as long.
	WriteDeadline time.Duration
	// WriteConcurrency is the number of batches PutItems writes at once.
	WriteConcurrency int
	// IndexConcurrency is the number of BatchWriteItem calls a claim
	// writer of the dedupe index keeps in flight (report.concurrency);
	// 0 means WriteConcurrency.
	IndexConcurrency int
	// RetryBase and RetryCap shape the backoff of batch calls: before retry n
	// (from 0) it sleeps a random duration in [0, min(RetryCap,
	// RetryBase*2^n)) ("full jitter").
	RetryBase, RetryCap time.Duration
	// WaitMinDelay, WaitMaxDelay and WaitTimeout tune Init's wait for a
	// new table to become ACTIVE (tests shorten them).
	WaitMinDelay, WaitMaxDelay, WaitTimeout time.Duration
	// Logger receives retry warnings and Init's progress; nil discards.
	Logger *slog.Logger
}

// API is the subset of *dynamodb.Client the store uses. It is declared
// here so that tests can inject faults (throttling, unprocessed items)
// that no emulator produces. Implementations must be safe for concurrent
// use and retry transient errors as the SDK client does.
type API interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is the DynamoDB store. It is safe for concurrent use. The
// embedded State is the job state (checkpoint.Store) and the embedded Index
// the dedupe index (collect.Index), both in the state table.
type Store struct {
	*jobstate.State
	*dedupeindex.Index
	api  API
	opts Options
	log  *slog.Logger
	// batch runs PutItems' batch calls, and the index's: tests replace its
	// Sleep to observe backoff.
	batch *batch.Retrier
}

// tableName is DynamoDB's rule for table names.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// New returns a Store over api. It does not touch the tables: Init
// creates them.
func New(api API, opts Options) (*Store, error) {
	if api == nil {
		return nil, errors.New("dynamodb: nil API client")
	}
	for _, f := range []struct{ key, v string }{
		{"store.dynamodb.table", opts.Table},
		{"store.dynamodb.state_table", opts.StateTable},
	} {
		if !tableName.MatchString(f.v) {
			return nil, fmt.Errorf("%s %q: want 3 to 255 characters of [a-zA-Z0-9_.-]", f.key, f.v)
		}
	}
	if opts.Table == opts.StateTable {
		return nil, fmt.Errorf("store.dynamodb.state_table %q: must differ from store.dynamodb.table", opts.StateTable)
	}
	if opts.PartitionAttr == "" {
		opts.PartitionAttr = DefaultPartitionAttr
	}
	if opts.SortAttr == "" {
		opts.SortAttr = DefaultSortAttr
	}
	if opts.PartitionAttr == opts.SortAttr {
		return nil, fmt.Errorf("keys.sort_attr %q: must differ from keys.partition_attr", opts.SortAttr)
	}
	setDefault(&opts.WriteDeadline, DefaultWriteDeadline)
	setDefault(&opts.RetryBase, DefaultRetryBase)
	setDefault(&opts.RetryCap, DefaultRetryCap)
	setDefault(&opts.WaitMinDelay, DefaultWaitMinDelay)
	setDefault(&opts.WaitMaxDelay, DefaultWaitMaxDelay)
	setDefault(&opts.WaitTimeout, DefaultWaitTimeout)
	if opts.WaitMaxDelay < opts.WaitMinDelay {
		opts.WaitMaxDelay = opts.WaitMinDelay
	}
	if opts.WriteConcurrency <= 0 {
		opts.WriteConcurrency = DefaultWriteConcurrency
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &batch.Retrier{
		API: api, Deadline: opts.WriteDeadline, RetryBase: opts.RetryBase, RetryCap: opts.RetryCap,
		Concurrency: opts.WriteConcurrency, Logger: log,
	}
	if opts.IndexConcurrency <= 0 {
		opts.IndexConcurrency = opts.WriteConcurrency
	}
	ib := b
	if opts.IndexConcurrency != opts.WriteConcurrency {
		c := *b
		c.Concurrency = opts.IndexConcurrency
		ib = &c
	}
	return &Store{
		State: jobstate.New(api, opts.StateTable),
		Index: dedupeindex.New(api, opts.StateTable, ib, log),
		api:   api, opts: opts, log: log, batch: b,
	}, nil
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// ClientConfig locates DynamoDB.
type ClientConfig struct {
	// Region; "" uses the SDK's default resolution (AWS_REGION, profile).
	Region string
	// Endpoint overrides the service endpoint (DynamoDB Local); "" uses
	// the SDK's default resolution, which honours AWS_ENDPOINT_URL_DYNAMODB
	// and AWS_ENDPOINT_URL.
	Endpoint string
	// RequestTimeout bounds one HTTP request: 0 = 1 minute. Fault tests
	// shorten it.
	RequestTimeout time.Duration
	// MaxBackoff is the SDK retryer's longest wait between attempts: 0 =
	// the SDK's (20 s). Fault tests shorten it.
	MaxBackoff time.Duration
	// Logger, when set, gets each retry (package awsclient).
	Logger *slog.Logger
}

// clientMaxAttempts is the SDK retryer's attempts per request: with its
// exponential backoff capped at 20 s, a throttled request keeps trying for
// about a minute before the error becomes final.
const clientMaxAttempts = 8

// requestTimeout bounds one HTTP request (a Query page is at most 1 MB).
const requestTimeout = time.Minute

// NewClient returns a DynamoDB client. Credentials come from the SDK's
// default chain. Requests use the SDK's standard retryer with
// clientMaxAttempts attempts and no client-side retry quota (a batch job
// would rather wait out throttling than fail a run on a quota).
//
// Response CRC32 validation is disabled only when an endpoint override is
// in use (Endpoint, or AWS_ENDPOINT_URL[_DYNAMODB] / endpoint_url in the
// shared config): DynamoDB Local omits x-amz-crc32 on error responses and
// the SDK would log a warning and drop the connection. Against AWS the
// check stays on.
func NewClient(ctx context.Context, c ClientConfig) (*dynamodb.Client, error) {
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("store.dynamodb.endpoint %q: want an http:// or https:// URL", c.Endpoint)
		}
	}
	timeout := requestTimeout
	if c.RequestTimeout > 0 {
		timeout = c.RequestTimeout
	}
	opts := []func(*config.LoadOptions) error{
		// A request that hangs (a server that accepts and never answers)
		// would keep a run alive, and renewing its lease, forever.
		// Its connections check the lease fence right before each write
		// to the socket (fence.Transport).
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(timeout).WithTransportOptions(fence.Transport)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = clientMaxAttempts
				o.RateLimiter = ratelimit.None
				if c.MaxBackoff > 0 {
					o.MaxBackoff = c.MaxBackoff
				}
			})
		}),
	}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("store.dynamodb.region is empty and the AWS SDK found no region (set it, or AWS_REGION)")
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		// Writes are refused before they are sent when the context's lease
		// fence fails (package fence).
		o.HTTPClient = fence.Client{Inner: o.HTTPClient, IsWrite: fence.DynamoDBWrite}
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		// BaseEndpoint is already resolved from the environment and
		// shared config here, before our option runs.
		endpoint := "https://dynamodb." + o.Region + ".amazonaws.com"
		if o.BaseEndpoint != nil {
			o.DisableValidateResponseChecksum = true
			endpoint = *o.BaseEndpoint
		}
		o.Retryer = awsclient.LogRetries(o.Retryer, c.Logger, "DynamoDB", endpoint)
		o.Credentials = awsclient.HintCredentials(o.Credentials, c.Logger)
	}), nil
}

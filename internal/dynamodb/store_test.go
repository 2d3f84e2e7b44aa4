package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/storetest"
	"github.com/reportjob/reportjob/internal/testenv"
)

func TestMain(m *testing.M) {
	// DynamoDB Local accepts any credentials, but the SDK's default chain
	// must find some.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":     "rjtest",
		"AWS_SECRET_ACCESS_KEY": "rjtest",
	} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	os.Exit(m.Run())
}

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
	// runID keeps table names of this process apart from those of earlier
	// runs against the same in-memory server.
	runID     = strconv.FormatInt(time.Now().UnixNano()%1e10, 36)
	tableSeq  atomic.Int64
	fastRetry = func(o *Options) {
		o.WaitMinDelay, o.WaitMaxDelay = 20*time.Millisecond, 100*time.Millisecond
	}
)

// testClient returns a client of DynamoDB Local, or skips the test.
func testClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	endpoint := testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
	clientOnce.Do(func() {
		client, clientErr = NewClient(context.Background(), ClientConfig{Region: "us-east-1", Endpoint: endpoint})
	})
	if clientErr != nil {
		t.Fatalf("NewClient: %v", clientErr)
	}
	return client
}

// tableNames returns a fresh data/state table name pair for t.
func tableNames(t testing.TB) (string, string) {
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	base := fmt.Sprintf("rj_%s_%08x_%d", runID, h.Sum32(), tableSeq.Add(1))
	return base + "_data", base + "_state"
}

// deleteTables drops the tables when t ends, to keep the server small.
func deleteTables(t testing.TB, c *dynamodb.Client, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			_, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
			var nf *types.ResourceNotFoundException
			if err != nil && !errors.As(err, &nf) {
				t.Errorf("delete table %s: %v", n, err)
			}
		}
	})
}

// newStore returns an initialised Store on fresh tables over api (the
// real client when nil).
func newStore(t testing.TB, api API, opts ...func(*Options)) *Store {
	t.Helper()
	c := testClient(t)
	if api == nil {
		api = c
	}
	data, state := tableNames(t)
	o := Options{Table: data, StateTable: state}
	fastRetry(&o)
	for _, f := range opts {
		f(&o)
	}
	s, err := New(api, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	deleteTables(t, c, data, state)
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return s
}

// TestConformance runs the data table and job state suites through the
// Store, which embeds a jobstate.State over its state table (package
// jobstate tests the job state itself, with lost responses and without
// ALL_OLD items).
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := newStore(t, nil)
		return storetest.Backend{Source: s, Writer: s, Checkpoints: s, Outbox: s}
	})
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"ok", Options{Table: "data", StateTable: "state"}, ""},
		{"no table", Options{StateTable: "state"}, "store.dynamodb.table"},
		{"bad state table", Options{Table: "data", StateTable: "st ate"}, "store.dynamodb.state_table"},
		{"same tables", Options{Table: "data", StateTable: "data"}, "must differ"},
		{"same keys", Options{Table: "data", StateTable: "state", PartitionAttr: "k", SortAttr: "k"}, "keys.sort_attr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(&dynamodb.Client{}, tc.opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if s.opts.PartitionAttr != DefaultPartitionAttr || s.opts.SortAttr != DefaultSortAttr ||
					s.opts.WriteDeadline != DefaultWriteDeadline || s.opts.WaitMinDelay != DefaultWaitMinDelay {
					t.Errorf("defaults not applied: %+v", s.opts)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New(%+v) = %v, want an error naming %q", tc.opts, err, tc.wantErr)
			}
		})
	}
}

func TestNewClientEndpoint(t *testing.T) {
	if _, err := NewClient(t.Context(), ClientConfig{Region: "us-east-1", Endpoint: "127.0.0.1:8000"}); err == nil ||
		!strings.Contains(err.Error(), "store.dynamodb.endpoint") {
		t.Errorf("NewClient with a scheme-less endpoint: %v, want an error naming store.dynamodb.endpoint", err)
	}
	c, err := NewClient(t.Context(), ClientConfig{Region: "eu-west-1", Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	o := c.Options()
	if !o.DisableValidateResponseChecksum || aws.ToString(o.BaseEndpoint) != "http://127.0.0.1:1" || o.Region != "eu-west-1" {
		t.Errorf("client options: checksum disabled %v, endpoint %q, region %q", o.DisableValidateResponseChecksum,
			aws.ToString(o.BaseEndpoint), o.Region)
	}
	if o.Retryer.MaxAttempts() != clientMaxAttempts {
		t.Errorf("retryer max attempts %d, want %d", o.Retryer.MaxAttempts(), clientMaxAttempts)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	c, err = NewClient(t.Context(), ClientConfig{Region: "eu-west-1"})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if c.Options().DisableValidateResponseChecksum {
		t.Errorf("response checksum validation disabled without an endpoint override")
	}
}

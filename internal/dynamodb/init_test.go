package dynamodb

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/dedupeindex"
	"github.com/reportjob/reportjob/internal/testenv"
)

func TestInitTwice(t *testing.T) {
	s := newStore(t, nil) // Init once
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("second Init: %v", err)
	}
	// Another process's Init, concurrently, over the same tables.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			s2, err := New(testClient(t), s.opts)
			if err == nil {
				err = s2.Init(t.Context())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Init %d: %v", i, err)
		}
	}

	c := testClient(t)
	for _, tc := range []struct {
		table string
		keys  []keyAttr
	}{
		{s.opts.Table, []keyAttr{{DefaultPartitionAttr, "HASH"}, {DefaultSortAttr, "RANGE"}}},
		{s.opts.StateTable, []keyAttr{{"job", "HASH"}}},
	} {
		out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(tc.table)})
		if err != nil {
			t.Fatalf("DescribeTable %s: %v", tc.table, err)
		}
		d := out.Table
		if d.TableStatus != types.TableStatusActive {
			t.Errorf("%s: status %s, want ACTIVE", tc.table, d.TableStatus)
		}
		if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
			t.Errorf("%s: billing mode %+v, want PAY_PER_REQUEST", tc.table, d.BillingModeSummary)
		}
		if err := checkSchema(tc.table, d, tc.keys); err != nil {
			t.Errorf("%s: %v", tc.table, err)
		}
	}
	ttl, err := c.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.opts.StateTable)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled ||
		aws.ToString(d.AttributeName) != dedupeindex.AttrExpiresAt {
		t.Errorf("state table Time to Live %+v, want ENABLED on %s", d, dedupeindex.AttrExpiresAt)
	}
}

// TestInitTTLOtherAttribute: a state table whose Time to Live is on for
// another attribute is refused, and left as it is.
func TestInitTTLOtherAttribute(t *testing.T) {
	c := testClient(t)
	data, state := tableNames(t)
	deleteTables(t, c, data, state)
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(state),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("job"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("job"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	_, err = c.UpdateTimeToLive(t.Context(), &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(state),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	if err != nil {
		t.Fatalf("UpdateTimeToLive: %v", err)
	}
	o := Options{Table: data, StateTable: state}
	fastRetry(&o)
	s, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Init(t.Context())
	if err == nil || !strings.Contains(err.Error(), `"ttl"`) || !strings.Contains(err.Error(), dedupeindex.AttrExpiresAt) ||
		!strings.Contains(err.Error(), state) {
		t.Errorf("Init = %v, want an error naming the table, %q and %s", err, "ttl", dedupeindex.AttrExpiresAt)
	}
}

func TestInitWrongSchema(t *testing.T) {
	c := testClient(t)
	tests := []struct {
		name     string
		state    bool // the state table is the wrong one
		keys     []types.KeySchemaElement
		defs     []types.AttributeDefinition
		wantAttr string
	}{
		{
			name:     "other partition key",
			keys:     []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			defs:     []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			wantAttr: `partition key is "pk", want "quarter_hour_timestamp"`,
		},
		{
			name:     "no sort key",
			keys:     []types.KeySchemaElement{{AttributeName: aws.String(DefaultPartitionAttr), KeyType: types.KeyTypeHash}},
			defs:     []types.AttributeDefinition{{AttributeName: aws.String(DefaultPartitionAttr), AttributeType: types.ScalarAttributeTypeS}},
			wantAttr: `no sort key, want "random_timestamp"`,
		},
		{
			name: "numeric sort key",
			keys: []types.KeySchemaElement{
				{AttributeName: aws.String(DefaultPartitionAttr), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(DefaultSortAttr), KeyType: types.KeyTypeRange},
			},
			defs: []types.AttributeDefinition{
				{AttributeName: aws.String(DefaultPartitionAttr), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String(DefaultSortAttr), AttributeType: types.ScalarAttributeTypeN},
			},
			wantAttr: `sort key "random_timestamp" has type N, want S`,
		},
		{
			name:  "state table with a sort key",
			state: true,
			keys: []types.KeySchemaElement{
				{AttributeName: aws.String("job"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("at"), KeyType: types.KeyTypeRange},
			},
			defs: []types.AttributeDefinition{
				{AttributeName: aws.String("job"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("at"), AttributeType: types.ScalarAttributeTypeS},
			},
			wantAttr: `unexpected sort key "at"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, state := tableNames(t)
			deleteTables(t, c, data, state)
			wrong := data
			if tc.state {
				wrong = state
			}
			_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
				TableName: aws.String(wrong), KeySchema: tc.keys, AttributeDefinitions: tc.defs,
				BillingMode: types.BillingModePayPerRequest,
			})
			if err != nil {
				t.Fatalf("CreateTable: %v", err)
			}
			o := Options{Table: data, StateTable: state}
			fastRetry(&o)
			s, err := New(c, o)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Init(t.Context())
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("Init = %v, want ErrSchema", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `"`+wrong+`"`) || !strings.Contains(msg, tc.wantAttr) {
				t.Errorf("Init error %q should name table %q and say %q", msg, wrong, tc.wantAttr)
			}
		})
	}
}

// TestInitWithoutTTL: on dynalite, a DynamoDB implementation without Time
// to Live (UpdateTimeToLive is an UnknownOperationException), Init creates
// both tables, warns what that means and how to turn it on, and succeeds;
// a second Init too.
func TestInitWithoutTTL(t *testing.T) {
	endpoint := testenv.Require(t, testenv.EnvDynalite, "dynalite")
	c, err := NewClient(t.Context(), ClientConfig{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	data, state := tableNames(t)
	deleteTables(t, c, data, state)
	var logs bytes.Buffer
	o := Options{Table: data, StateTable: state, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	fastRetry(&o)
	s, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		logs.Reset()
		if err := s.Init(t.Context()); err != nil {
			t.Fatalf("Init %d: %v", i+1, err)
		}
		for _, want := range []string{"level=WARN", "Time to Live", state, dedupeindex.AttrExpiresAt, "update-time-to-live"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("Init %d: the log lacks %q:\n%s", i+1, want, logs.String())
			}
		}
	}
	for _, table := range []string{data, state} {
		out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil || out.Table.TableStatus != types.TableStatusActive {
			t.Errorf("table %s: %v %v", table, out, err)
		}
	}
}

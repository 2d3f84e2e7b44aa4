package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/dynamodb/dedupeindex"
)

// ErrSchema means a table exists with a key schema other than the one the
// store needs. Errors that match it name the table and the attribute.
var ErrSchema = errors.New("table key schema mismatch")

type keyAttr struct{ name, keyType string }

// Init creates the data table (HASH PartitionAttr S, RANGE SortAttr S) and
// the state table (HASH job S), both PAY_PER_REQUEST, when they are
// missing, and waits until both are ACTIVE. A table that already exists is
// kept when its key schema is the expected one, else Init returns an error
// matching ErrSchema. Then it turns on Time to Live on the state table's
// expires_at attribute (the dedupe index's expiry), unless it is on
// already; a state table whose Time to Live is on for another attribute is
// an error. A server without Time to Live (UnknownOperationException, as
// dynalite answers) gets a warning and Init goes on. Init is idempotent
// and safe to run concurrently.
func (s *Store) Init(ctx context.Context) error {
	tables := []struct {
		name string
		keys []keyAttr
	}{
		{s.opts.Table, []keyAttr{{s.opts.PartitionAttr, "HASH"}, {s.opts.SortAttr, "RANGE"}}},
		{s.opts.StateTable, []keyAttr{{attr.Job, "HASH"}}},
	}
	for _, t := range tables {
		if err := s.ensureTable(ctx, t.name, t.keys); err != nil {
			return err
		}
	}
	return s.ensureTTL(ctx)
}

// ensureTTL turns on Time to Live for dedupeindex.AttrExpiresAt on the
// state table.
func (s *Store) ensureTTL(ctx context.Context) error {
	table := s.opts.StateTable
	var refused error // UpdateTimeToLive's ValidationException, if any
	for try := 0; ; try++ {
		out, err := s.api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
		if unknownOperation(err) {
			s.warnNoTTL(table, err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("describe time to live of table %q: %w", table, err)
		}
		var (
			attr   string
			status types.TimeToLiveStatus
		)
		if d := out.TimeToLiveDescription; d != nil {
			attr, status = aws.ToString(d.AttributeName), d.TimeToLiveStatus
		}
		switch {
		case (status == types.TimeToLiveStatusEnabled || status == types.TimeToLiveStatusEnabling) && attr == dedupeindex.AttrExpiresAt:
			return nil
		case status == types.TimeToLiveStatusEnabled || status == types.TimeToLiveStatusEnabling:
			return fmt.Errorf("table %q has Time to Live on attribute %q, want %q (the dedupe index's expiry)",
				table, attr, dedupeindex.AttrExpiresAt)
		case status == types.TimeToLiveStatusDisabling:
			// DynamoDB refuses a change until this settles (up to an hour).
			return fmt.Errorf("table %q: Time to Live is being disabled; run init again when it is DISABLED", table)
		case refused != nil:
			return fmt.Errorf("enable time to live on %s of table %q: %w", dedupeindex.AttrExpiresAt, table, refused)
		case try > 0:
			return fmt.Errorf("table %q: Time to Live is %s after enabling it", table, status)
		}
		_, err = s.api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(dedupeindex.AttrExpiresAt), Enabled: aws.Bool(true),
			},
		})
		var ae smithy.APIError
		switch {
		case err == nil:
			s.log.Info("enabled time to live", logTable, table, logAttr, dedupeindex.AttrExpiresAt)
		case unknownOperation(err):
			s.warnNoTTL(table, err)
			return nil
		case errors.As(err, &ae) && ae.ErrorCode() == "ValidationException":
			// A concurrent Init may have enabled it in between ("already
			// enabled"): describe again before failing.
			refused = err
		default:
			return fmt.Errorf("enable time to live on %s of table %q: %w", dedupeindex.AttrExpiresAt, table, err)
		}
	}
}

// unknownOperation reports whether err is the server's answer to an
// operation it does not implement (dynalite has no Time to Live).
func unknownOperation(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException"
}

// warnNoTTL says what a server without Time to Live means for the job: it
// stays exact (the job checks each dedupe claim against the window
// itself), but nothing removes the dedupe index's old entries, so the state table
// only grows.
func (s *Store) warnNoTTL(table string, err error) {
	s.log.Warn("this DynamoDB server does not support Time to Live: init goes on without it. "+
		"The job stays exact (it checks each dedupe claim against the window itself), "+
		"but the server never removes them: the state table grows by one entry per billed transaction. "+
		"On a server that supports it, turn it on with `reportjob init` or "+
		"`aws dynamodb update-time-to-live --table-name "+table+" --time-to-live-specification Enabled=true,AttributeName="+
		dedupeindex.AttrExpiresAt+"`; elsewhere delete the items whose "+dedupeindex.AttrExpiresAt+" (Unix seconds) has passed",
		logTable, table, logAttr, dedupeindex.AttrExpiresAt, "err", err)
}

func (s *Store) ensureTable(ctx context.Context, name string, keys []keyAttr) error {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, k := range keys {
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{
			AttributeName: aws.String(k.name), KeyType: types.KeyType(k.keyType),
		})
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(k.name), AttributeType: types.ScalarAttributeTypeS,
		})
	}
	_, err := s.api.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	switch {
	case err == nil:
		s.log.Info("creating table", logTable, name)
	case errors.As(err, &inUse):
		// Already there (or being created by a concurrent Init).
	default:
		return fmt.Errorf("create table %q: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(s.api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = s.opts.WaitMinDelay
		o.MaxDelay = s.opts.WaitMaxDelay
	})
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, s.opts.WaitTimeout)
	if err != nil {
		return fmt.Errorf("wait for table %q to be active: %w", name, err)
	}
	return checkSchema(name, out.Table, keys)
}

// checkSchema reports how desc's key schema differs from want.
func checkSchema(name string, desc *types.TableDescription, want []keyAttr) error {
	if desc == nil {
		return fmt.Errorf("describe table %q: no table description", name)
	}
	got := map[string]string{} // key type -> attribute name
	for _, k := range desc.KeySchema {
		got[string(k.KeyType)] = aws.ToString(k.AttributeName)
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range desc.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	role := map[string]string{"HASH": "partition", "RANGE": "sort"}
	for _, k := range want {
		g, ok := got[k.keyType]
		switch {
		case !ok:
			return fmt.Errorf("table %q has no %s key, want %q (S): %w", name, role[k.keyType], k.name, ErrSchema)
		case g != k.name:
			return fmt.Errorf("table %q: %s key is %q, want %q: %w", name, role[k.keyType], g, k.name, ErrSchema)
		case attrTypes[g] != types.ScalarAttributeTypeS:
			return fmt.Errorf("table %q: %s key %q has type %s, want S: %w", name, role[k.keyType], g, attrTypes[g], ErrSchema)
		}
		delete(got, k.keyType)
	}
	for kt, attr := range got {
		return fmt.Errorf("table %q has an unexpected %s key %q: %w", name, role[kt], attr, ErrSchema)
	}
	return nil
}

package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrSchema means a table exists with a key schema other than the one the
// store needs. Errors that match it name the table and the attribute.
var ErrSchema = errors.New("table key schema mismatch")

// attrJob is the state table's key.
const attrJob = "job"

type keyAttr struct{ name, keyType string }

// Init creates the data table (HASH PartitionAttr S, RANGE SortAttr S) and
// the state table (HASH job S), both PAY_PER_REQUEST, when they are
// missing, and waits until both are ACTIVE. A table that already exists is
// kept when its key schema is the expected one, else Init returns an error
// matching ErrSchema. Init is idempotent and safe to run concurrently.
func (s *Store) Init(ctx context.Context) error {
	tables := []struct {
		name string
		keys []keyAttr
	}{
		{s.opts.Table, []keyAttr{{s.opts.PartitionAttr, "HASH"}, {s.opts.SortAttr, "RANGE"}}},
		{s.opts.StateTable, []keyAttr{{attrJob, "HASH"}}},
	}
	for _, t := range tables {
		if err := s.ensureTable(ctx, t.name, t.keys); err != nil {
			return err
		}
	}
	return nil
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

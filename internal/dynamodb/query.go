package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/item"
)

// Query implements collect.Source with strongly consistent Queries of
// partition pk (KeyCondition #pk = :pk [AND #sk > :after]), one DynamoDB
// page (1 MB) per call of fn. Throttling and transient errors are retried
// by the client's retryer.
func (s *Store) Query(ctx context.Context, pk, after string, fn func(page []item.Item) error) error {
	if pk == "" {
		return errors.New("query: empty partition key")
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.opts.Table),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": s.opts.PartitionAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk > :after")
		in.ExpressionAttributeNames["#sk"] = s.opts.SortAttr
		in.ExpressionAttributeValues[":after"] = &types.AttributeValueMemberS{Value: after}
	}
	p := dynamodb.NewQueryPaginator(s.api, in)
	var page []item.Item
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query table %q partition %q after %q: %w", s.opts.Table, pk, after, err)
		}
		if len(out.Items) == 0 {
			continue
		}
		page = page[:0]
		for _, av := range out.Items {
			it, err := s.fromAttributeValues(av)
			if err != nil {
				return fmt.Errorf("query table %q partition %q: %w", s.opts.Table, pk, err)
			}
			page = append(page, it)
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// fromAttributeValues converts a stored item. Key attributes become PK and
// SK; S and N attributes keep their text; any other type becomes an
// item.Other value whose Text names the type ("BOOL", "M", ...).
func (s *Store) fromAttributeValues(av map[string]types.AttributeValue) (item.Item, error) {
	it := item.Item{Attrs: make(map[string]item.Value, len(av))}
	for name, v := range av {
		switch name {
		case s.opts.PartitionAttr, s.opts.SortAttr:
			sv, ok := v.(*types.AttributeValueMemberS)
			if !ok {
				return item.Item{}, fmt.Errorf("key attribute %s has type %s, want S", name, attr.TypeName(v))
			}
			if name == s.opts.PartitionAttr {
				it.PK = sv.Value
			} else {
				it.SK = sv.Value
			}
			continue
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			it.Attrs[name] = item.S(v.Value)
		case *types.AttributeValueMemberN:
			it.Attrs[name] = item.N(v.Value)
		default:
			it.Attrs[name] = item.Value{Type: item.Other, Text: attr.TypeName(v)}
		}
	}
	return it, nil
}

// toAttributeValues converts an item for writing. Only S and N attributes
// can be written, and Attrs must not hold the key attributes.
func (s *Store) toAttributeValues(it item.Item) (map[string]types.AttributeValue, error) {
	if it.PK == "" || it.SK == "" {
		return nil, fmt.Errorf("item (%q, %q): empty %s or %s", it.PK, it.SK, s.opts.PartitionAttr, s.opts.SortAttr)
	}
	av := make(map[string]types.AttributeValue, len(it.Attrs)+2)
	av[s.opts.PartitionAttr] = &types.AttributeValueMemberS{Value: it.PK}
	av[s.opts.SortAttr] = &types.AttributeValueMemberS{Value: it.SK}
	for name, v := range it.Attrs {
		if name == "" || name == s.opts.PartitionAttr || name == s.opts.SortAttr {
			return nil, fmt.Errorf("item (%q, %q): attribute name %q is not allowed in Attrs", it.PK, it.SK, name)
		}
		switch v.Type {
		case item.String:
			av[name] = &types.AttributeValueMemberS{Value: v.Text}
		case item.Number:
			av[name] = &types.AttributeValueMemberN{Value: v.Text}
		default:
			return nil, fmt.Errorf("item (%q, %q): attribute %s has type %s, only S and N can be written", it.PK, it.SK, name, v.Type)
		}
	}
	return av, nil
}

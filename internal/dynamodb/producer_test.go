package dynamodb

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/item"
)

const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// seedSortKey is the sort key the Rails producer of seed 001 writes:
// "%Y-%m-%dT%H:%M:%S" + "." + SecureRandom.base58(16).
func seedSortKey(t time.Time, r *rand.Rand) string {
	b := []byte(t.UTC().Format("2006-01-02T15:04:05") + ".")
	for range 16 {
		b = append(b, base58[r.IntN(len(base58))])
	}
	return string(b)
}

// TestForeignProducer reads items that another program wrote with plain
// PutItem, in the seed's format, including attribute types we never write.
func TestForeignProducer(t *testing.T) {
	s := newStore(t, nil)
	c := testClient(t)
	r := rand.New(rand.NewPCG(1, 2))
	const pk = "201610230130"
	start := time.Date(2016, 10, 23, 1, 30, 0, 0, time.UTC)
	var sks []string
	for i := range 30 {
		sk := seedSortKey(start.Add(time.Duration(i*29)*time.Second), r)
		sks = append(sks, sk)
		av := map[string]types.AttributeValue{
			"quarter_hour_timestamp": &types.AttributeValueMemberS{Value: pk},
			"random_timestamp":       &types.AttributeValueMemberS{Value: sk},
			"transaction_id":         &types.AttributeValueMemberS{Value: "tx-" + strconv.Itoa(i)},
			"agency_id":              &types.AttributeValueMemberS{Value: "agency-" + strconv.Itoa(i%3)},
			"amount":                 &types.AttributeValueMemberN{Value: "19.990"},
			"currency":               &types.AttributeValueMemberS{Value: "USD"},
			"paid":                   &types.AttributeValueMemberBOOL{Value: true},
			"meta":                   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": &types.AttributeValueMemberS{Value: "b"}}},
			"tags":                   &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		}
		if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(s.opts.Table), Item: av}); err != nil {
			t.Fatalf("raw PutItem: %v", err)
		}
	}
	// Another quarter, which must not show up.
	if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(s.opts.Table), Item: map[string]types.AttributeValue{
		"quarter_hour_timestamp": &types.AttributeValueMemberS{Value: "201610230145"},
		"random_timestamp":       &types.AttributeValueMemberS{Value: seedSortKey(start.Add(15*time.Minute), r)},
	}}); err != nil {
		t.Fatalf("raw PutItem: %v", err)
	}
	slices.Sort(sks)

	var got []item.Item
	if err := s.Query(t.Context(), pk, "", func(page []item.Item) error {
		got = append(got, page...)
		return nil
	}); err != nil {
		t.Fatalf("Query: %v", err)
	}
	if len(got) != len(sks) {
		t.Fatalf("Query returned %d items, want %d", len(got), len(sks))
	}
	for i, it := range got {
		if it.PK != pk || it.SK != sks[i] {
			t.Errorf("item %d keys (%q, %q), want (%q, %q)", i, it.PK, it.SK, pk, sks[i])
		}
		want := map[string]item.Value{
			"transaction_id": item.S(it.Attrs["transaction_id"].Text),
			"agency_id":      item.S(it.Attrs["agency_id"].Text),
			"amount":         item.N("19.99"), // DynamoDB normalises numbers
			"currency":       item.S("USD"),
			"paid":           {Type: item.Other, Text: "BOOL"},
			"meta":           {Type: item.Other, Text: "M"},
			"tags":           {Type: item.Other, Text: "SS"},
		}
		if !maps(it.Attrs, want) {
			t.Errorf("item %d attrs = %v, want %v", i, it.Attrs, want)
		}
	}

	// Resume after the 10th item.
	var rest []string
	if err := s.Query(t.Context(), pk, sks[9], func(page []item.Item) error {
		for _, it := range page {
			rest = append(rest, it.SK)
		}
		return nil
	}); err != nil {
		t.Fatalf("Query after: %v", err)
	}
	if !slices.Equal(rest, sks[10:]) {
		t.Errorf("Query(after %q) = %q, want %q", sks[9], rest, sks[10:])
	}
}

func maps(a, b map[string]item.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestPutNew(t *testing.T) {
	s := newStore(t, nil)
	it := item.Item{PK: "201610230130", SK: "2016-10-23T01:30:00.7ZkKN6dce92mgcDD",
		Attrs: map[string]item.Value{"transaction_id": item.S("tx-1"), "amount": item.N("1.50")}}
	if err := s.PutNew(t.Context(), it); err != nil {
		t.Fatalf("PutNew: %v", err)
	}
	again := it
	again.Attrs = map[string]item.Value{"transaction_id": item.S("tx-1"), "amount": item.N("9.99")}
	if err := s.PutNew(t.Context(), again); !errors.Is(err, ErrExists) {
		t.Fatalf("second PutNew = %v, want ErrExists", err)
	}
	var got []item.Item
	if err := s.Query(t.Context(), it.PK, "", func(p []item.Item) error { got = append(got, p...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Attrs["amount"] != item.N("1.5") {
		t.Errorf("after refused PutNew: %+v, want the first item (amount 1.5)", got)
	}
}

package dynamodb

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
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

// TestStateFormat pins the state item's stored form, which operators read
// with the AWS CLI and the README documents.
func TestStateFormat(t *testing.T) {
	s := newStore(t, nil)
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	l, err := s.Acquire(t.Context(), "job-1", "host-a", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	to := time.Date(2024, 3, 1, 11, 0, 0, 0, time.UTC)
	rc := checkpoint.Recheck{Start: to.Add(-time.Hour), End: to, Read: now}
	rs := checkpoint.Restatement{Start: rc.Start, End: rc.End, Revision: 2, Reason: "recheck", At: now,
		ItemsBefore: 10, ItemsAfter: 11}
	if err := s.Commit(t.Context(), "job-1", l, now, time.Time{}, to,
		checkpoint.Update{SetRecheck: &rc, Restated: &rs}); err != nil {
		t.Fatal(err)
	}
	out, err := testClient(t).GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(s.opts.StateTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"job": &types.AttributeValueMemberS{Value: "job-1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"job":           "S:job-1",
		"checkpoint":    "N:" + strconv.FormatInt(to.UnixMilli(), 10),
		"lease_owner":   "S:host-a",
		"lease_token":   "N:1",
		"lease_expires": "N:" + strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10),
		// 1709287200000 = 10:00, 1709290800000 = 11:00, 1709294400000 = 12:00
		"rechecks": "M{1709287200000=M{end=N:1709290800000,read=N:1709294400000}}",
		"restated": "L[M{at=N:1709294400000,end=N:1709290800000,items_after=N:11,items_before=N:10," +
			"reason=S:recheck,revision=N:2,start=N:1709287200000}]",
	}
	got := map[string]string{}
	for k, v := range out.Item {
		got[k] = renderAV(v)
	}
	if len(got) != len(want) {
		t.Errorf("state item = %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("state item %s = %q, want %q", k, got[k], w)
		}
	}

	if err := s.Release(t.Context(), "job-1", l); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(t.Context(), "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Lease != (checkpoint.Lease{Owner: "host-a", Token: 1}) || !st.Checkpoint.Equal(to) || len(st.Rechecks) != 1 || len(st.Restated) != 1 {
		t.Errorf("after Release: %+v, want checkpoint %v and lease {Owner: host-a, Token: 1}", st, to)
	}
}

// renderAV writes v as TYPE:value, maps with sorted keys.
func renderAV(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + renderAV(v.Value[k])
		}
		return "M{" + strings.Join(parts, ",") + "}"
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = renderAV(e)
		}
		return "L[" + strings.Join(parts, ",") + "]"
	}
	return avType(v)
}

// countGets counts GetItem calls.
type countGets struct {
	API
	n atomic.Int64
}

func (c *countGets) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.n.Add(1)
	return c.API.GetItem(ctx, in, opts...)
}

// TestHeldFromOldItem checks that a refused Acquire or Commit learns the
// holder from the failed write itself (ALL_OLD), without a second read.
func TestHeldFromOldItem(t *testing.T) {
	api := &countGets{API: testClient(t)}
	s := newStore(t, api)
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	l, err := s.Acquire(t.Context(), "job", "a", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), "job", "b", now, time.Minute)
	var held *checkpoint.HeldError
	if !errors.As(err, &held) || held.Owner != "a" || !held.Expires.Equal(l.Expires) {
		t.Fatalf("Acquire by b = %v, want HeldError{a, %v}", err, l.Expires)
	}
	err = s.Commit(t.Context(), "job", l, now, now.Add(-time.Hour), now, checkpoint.Update{})
	if !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Commit from a wrong checkpoint = %v, want ErrConflict", err)
	}
	if n := api.n.Load(); n != 0 {
		t.Errorf("%d GetItem calls, want 0 (the server returns ALL_OLD on a failed condition)", n)
	}
}

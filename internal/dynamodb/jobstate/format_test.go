package jobstate

import (
	"context"
	"errors"
	"maps"
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
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// TestStateFormat pins the state item's stored form, which operators read
// with the AWS CLI and the README documents.
func TestStateFormat(t *testing.T) {
	s := newState(t, nil)
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
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
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
		// The owed recheck is in the month's own item (below).
		"recheck_months": "SS:2024-03",
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

	// 1709287200000 = 10:00, 1709290800000 = 11:00, 1709294400000 = 12:00
	out, err = testClient(t).GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"job": &types.AttributeValueMemberS{Value: "job-1#rechecks#2024-03"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]string{}
	for k, v := range out.Item {
		got[k] = renderAV(v)
	}
	if want := map[string]string{"job": "S:job-1#rechecks#2024-03", "p1709287200000": "M{end=N:1709290800000,read=N:1709294400000}"}; !maps.Equal(got, want) {
		t.Errorf("month item = %v, want %v", got, want)
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
	case *types.AttributeValueMemberSS:
		return "SS:" + strings.Join(slices.Sorted(slices.Values(v.Value)), ",")
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = renderAV(e)
		}
		return "L[" + strings.Join(parts, ",") + "]"
	}
	return attr.TypeName(v)
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
	s := newState(t, api)
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

package jobstate

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
)

// maxRecheckEntries is config's maxRecheckSpan (report.recheck_after's
// longest delay over report.period, at most 10,000 periods): the steady
// state's number of rechecks entries.
const maxRecheckEntries = 10000

// worstState is a job item at the bound: maxRecheckEntries 15-minute
// periods owed a recheck, read at an instant with every millisecond digit
// significant, and checkpoint.MaxRestated restatements with the longest
// reason and item counts.
func worstState(entries int) map[string]types.AttributeValue {
	base := time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)
	m := map[string]types.AttributeValue{}
	for i := range entries {
		s := base.Add(-time.Duration(i) * 15 * time.Minute)
		m[msKey(s)] = recheckAV(checkpoint.Recheck{Start: s, End: s.Add(15 * time.Minute), Read: s.Add(16*time.Minute + 123457*time.Millisecond)})
	}
	rs := make([]checkpoint.Restatement, checkpoint.MaxRestated)
	for i := range rs {
		rs[i] = checkpoint.Restatement{Start: base, End: base.Add(24 * time.Hour), Revision: 1 << 30, Reason: "verify --repair",
			At: base.Add(123457 * time.Millisecond), ItemsBefore: 1 << 50, ItemsAfter: 1 << 50}
	}
	return map[string]types.AttributeValue{
		"job": attr.S("billing-report-with-a-long-job-name"), attrCheckpoint: attr.Millis(base),
		attrLeaseOwner: attr.S("a-long-host-name.example.internal/4194304/0123456789ab"), attrLeaseToken: attr.N(1 << 50),
		attrLeaseExpires: attr.Millis(base.Add(123457 * time.Millisecond)),
		attrRechecks:     &types.AttributeValueMemberM{Value: m}, attrRestated: restatedAV(rs),
	}
}

// TestStateItemWorstCase: the job item at the configuration's bound fits
// DynamoDB's 400 KB item limit (as DynamoDB Local computes it); 10% more
// rechecks entries do not, which is how little room a backlog of overdue
// rechecks has at that bound (see the report of issue 15).
func TestStateItemWorstCase(t *testing.T) {
	c := testClient(t)
	table := ddbtest.StateTable(t)
	put := func(entries int) error {
		_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: worstState(entries)})
		return err
	}
	if err := put(maxRecheckEntries); err != nil {
		t.Fatalf("%d rechecks entries: %v", maxRecheckEntries, err)
	}
	if err := put(maxRecheckEntries * 11 / 10); err == nil {
		t.Logf("%d rechecks entries fit too", maxRecheckEntries*11/10)
	}
}

// itemBytes is an item's size as DynamoDB counts it against the 400 KB
// limit: attribute names and values; a number is about one byte per two
// significant digits plus one; a map or list 3 bytes plus one per element.
func itemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + avBytes(v)
	}
	return n
}

func avBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + avBytes(e)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + avBytes(e)
		}
		return n
	}
	return 0
}

// TestStateItemUpgradeAndSize (issue 31): a job item of the previous
// layout at its bound (10,000 owed rechecks inside, 20 restatements) is
// read as it is, and the next fenced write moves its rechecks into month
// items; then 10,000 more owed rechecks (a backlog of rechecks that keep
// failing) leave the job item's size as it was: it no longer depends on
// how many are owed, and each month item stays far below the limit.
func TestStateItemUpgradeAndSize(t *testing.T) {
	c := testClient(t)
	s := newState(t, nil)
	old := worstState(maxRecheckEntries)
	job := old["job"].(*types.AttributeValueMemberS).Value
	before := itemBytes(old)
	if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: old}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(t.Context(), job)
	if err != nil || len(st.Rechecks) != maxRecheckEntries || len(st.Restated) != checkpoint.MaxRestated {
		t.Fatalf("Load of the old layout: %d rechecks, %d restated, %v", len(st.Rechecks), len(st.Restated), err)
	}
	now := st.Lease.Expires.Add(time.Minute)
	l, err := s.Acquire(t.Context(), job, "upgrader", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The next fenced write: it moves the rechecks out, then sets its own.
	last := st.Rechecks[len(st.Rechecks)-1]
	next := checkpoint.Recheck{Start: last.End, End: last.End.Add(15 * time.Minute)}
	if err := s.Commit(t.Context(), job, l, now, st.Checkpoint, st.Checkpoint.Add(15*time.Minute), checkpoint.Update{SetRecheck: &next}); err != nil {
		t.Fatalf("the first write after the upgrade: %v", err)
	}
	raw := func(key string) map[string]types.AttributeValue {
		out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: attr.JobKey(key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	item := raw(job)
	if _, ok := item[attrRechecks]; ok {
		t.Fatalf("the job item still holds rechecks after the write")
	}
	after := itemBytes(item)
	st2, err := s.Load(t.Context(), job)
	if err != nil || len(st2.Rechecks) != maxRecheckEntries+1 || !st2.Rechecks[len(st2.Rechecks)-1].Start.Equal(next.Start) {
		t.Fatalf("Load after the migration: %d rechecks, %v", len(st2.Rechecks), err)
	}
	for i, r := range st.Rechecks {
		if g := st2.Rechecks[i]; !g.Start.Equal(r.Start) || !g.End.Equal(r.End) || !g.Read.Equal(r.Read) {
			t.Fatalf("recheck %d after the migration %+v, want %+v", i, g, r)
		}
	}

	// 10,000 more owed (seeded into month items as the writes would
	// leave them), one more set through the State.
	months := map[string]map[string]types.AttributeValue{}
	first := st.Rechecks[0].Start
	for i := 1; i <= maxRecheckEntries; i++ {
		s0 := first.Add(-time.Duration(i) * 15 * time.Minute)
		m := recheckMonth(s0)
		if months[m] == nil {
			if months[m] = raw(job + monthKeyInfix + m); months[m] == nil {
				months[m] = monthKey(job, m)
			}
		}
		months[m][recheckAttrPrefix+msKey(s0)] = recheckAV(checkpoint.Recheck{Start: s0, End: s0.Add(15 * time.Minute), Read: s0.Add(16*time.Minute + 123457*time.Millisecond)})
	}
	var names []string
	for m, it := range months {
		if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
			t.Fatal(err)
		}
		names = append(names, m)
	}
	if _, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: attr.JobKey(job),
		UpdateExpression:          aws.String("ADD #m :m"),
		ExpressionAttributeNames:  map[string]string{"#m": attrRecheckMonths},
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberSS{Value: names}}}); err != nil {
		t.Fatal(err)
	}
	more := checkpoint.Recheck{Start: next.End, End: next.End.Add(15 * time.Minute)}
	if err := s.Update(t.Context(), job, l, now, checkpoint.Update{SetRecheck: &more}); err != nil {
		t.Fatal(err)
	}
	st3, err := s.Load(t.Context(), job)
	if err != nil || len(st3.Rechecks) != 2*maxRecheckEntries+2 {
		t.Fatalf("Load with %d owed: %d rechecks, %v", 2*maxRecheckEntries+2, len(st3.Rechecks), err)
	}
	grown := itemBytes(raw(job))
	var largest int
	var largestMonth string
	for m := range months {
		if n := itemBytes(raw(job + monthKeyInfix + m)); n > largest {
			largest, largestMonth = n, m
		}
	}
	t.Logf("job item: %d bytes with %d rechecks inside (old layout); %d bytes after the migration; %d bytes with %d owed (%d months); largest month item %s: %d bytes",
		before, maxRecheckEntries, after, grown, len(st3.Rechecks), len(names)+1, largestMonth, largest)
	const limit = 400 * 1024
	if grown > 4*1024 || grown-after > 200 {
		t.Errorf("job item %d bytes with %d owed (%d after the migration with %d): want it independent of the rechecks owed", grown, len(st3.Rechecks), after, maxRecheckEntries+1)
	}
	// A month of 15-minute periods, the most a month item holds.
	if full := 31 * 96; largest*full/maxEntriesIn(months[largestMonth]) > limit/3 {
		t.Errorf("a full month item would be %d bytes: want a third of the limit at most", largest*full/maxEntriesIn(months[largestMonth]))
	}
}

// maxEntriesIn counts the recheck entries of a month item.
func maxEntriesIn(item map[string]types.AttributeValue) int {
	n := 0
	for k := range item {
		if strings.HasPrefix(k, recheckAttrPrefix) {
			n++
		}
	}
	return max(n, 1)
}
